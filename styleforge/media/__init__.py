"""Media: video and camera sources and sinks, optical flow, temporal consistency."""
