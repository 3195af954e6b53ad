// Dev builds only (-DSF_TILE_PROFILE=1; dev/kernels/frame/frame_phases.py, conv3x3/chain_profile.py):
// the fused 3×3 kernels record, per tile, clock64 at the phase marks of conv3x3_tile.cuh and the
// global timer at the tile's start and end, into a buffer the dev script registers. Each launch
// takes the next region of it and notes what it was, so that a whole frame's launches (a CUDA
// graph's nodes keep the regions they were given at capture) can be read back and told apart.
// Release builds compile none of it.
#pragma once

#ifndef SF_TILE_PROFILE
#define SF_TILE_PROFILE 0
#endif

namespace styleforge {

constexpr int kTileProfileSlots = 16;
constexpr int kTileProfileGlobalStart = 14, kTileProfileGlobalEnd = 15;   // global-timer slots

#if SF_TILE_PROFILE
// The region for one launch of `grid` CTAs, each with `iters` records of kTileProfileSlots (a
// persistent CTA: one record per tile; the chain: one per link), or null when no buffer is
// registered or it is full. Tag: what launched (conv3x3.cu: cin << 24 | cout << 16 | up << 8 |
// stride; the chain: kTileProfileChainTag). Defined in conv3x3.cu.
long long* tile_profile_region(long long tag, int grid, int iters);
constexpr long long kTileProfileChainTag = 0xC4A1;
#endif

}  // namespace styleforge
