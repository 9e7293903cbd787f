#include "replay/driver.hpp"

namespace dtsim::replay {

// ---- pairs of units (StageUnit::beside_previous, parallel.ep_overlap) ------------------------------------------
// DualPipe runs a forward and a backward chunk as one (DeepSeek-V3 technical report, arXiv 2412.19437, Sec. 3.2.1,
// Figure 4), and Megatron-Core's combined 1F1B the forward and backward of interleaved 1F1B's steady state: the GPU
// computes one chunk's attention or MLP while the other chunk's all-to-all or pipeline transfer is in flight. dtsim
// replays the pair on two lanes of the device: each lane walks its unit's steps; kernels and TP collectives (part of
// their chunk's compute stream) take the GPU one lane at a time (a lane that finds the GPU taken waits for it, and
// gets it as soon as the other lane's kernels end); expert all-to-alls and ZeRO-3 gathers run without the GPU,
// beside the other lane's kernels. The pair ends when both units have; each sends its output as it finishes.
//
// Booking: compute and TP collectives as they run; the GPU's idle time goes to what the lane whose collective ended
// was waiting for (book_idle), so that an all-to-all hidden under the other lane's kernels adds nothing and the parts
// of the breakdown still add up to the step.

bool Driver::take_gpu(size_t di, int lane)
{
  Device& d = devices_[di];
  if (!d.paired)
    return true;
  if (d.gpu_busy) {
    if (d.gpu_waiter >= 0)
      throw InternalError("take_gpu: two lanes waiting for one GPU");
    d.gpu_waiter = lane;
    return false;
  }
  d.gpu_busy = true;
  return true;
}

void Driver::release_gpu(size_t di)
{
  Device& d = devices_[di];
  if (!d.paired)
    return;
  d.gpu_busy = false;
  if (d.gpu_waiter >= 0) {
    const int waiter = d.gpu_waiter;
    d.gpu_waiter = -1;
    run_step(di, waiter);  // takes the GPU at once: the lanes alternate
  }
}

void Driver::book_idle(Device& d, double& category)
{
  const double now = Activities::now();
  if (d.gpu_busy || now <= d.free_t)
    return;  // the other lane computes: the collective was hidden
  category += now - d.free_t;
  d.free_t = now;
}

}  // namespace dtsim::replay
