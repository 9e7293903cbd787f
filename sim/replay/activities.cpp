#include "replay/activities.hpp"

#include <simgrid/kernel/Timer.hpp>
#include <xbt/log.h>

#include "platform/cluster_platform.hpp"

namespace dtsim::replay {

namespace sg4 = simgrid::s4u;

namespace {
// SimGrid 3.32's signals are static and cannot be disconnected: one callback per process dispatches to the
// activities object of the run in progress.
Activities* g_current = nullptr;
bool g_connected = false;
}  // namespace

Activities::Activities()
{
  int argc = 1;
  char name[] = "dtsim";
  char* argv[] = {name, nullptr};
  xbt_log_control_set("root.thresh:critical");
  engine_ = std::make_unique<sg4::Engine>(&argc, argv);
  sg4::Engine::set_config("network/model:CM02");
  sg4::Engine::set_config("network/crosstraffic:0");
  sg4::Engine::set_config("network/TCP-gamma:0");
  g_current = this;
  if (!g_connected) {
    g_connected = true;
    sg4::Activity::on_completion_cb(&Activities::on_completion);
  }
}

Activities::~Activities()
{
  if (g_current == this)
    g_current = nullptr;
}

void Activities::on_completion(sg4::Activity const& a)
{
  if (g_current == nullptr)
    return;
  auto* h = a.get_data<Handler>();
  if (h == &g_current->occupier_mark_) {
    // A released occupier completes twice: when cancel() is called, then when the engine ends its action. Only
    // after the second may it go (once this callback is over).
    auto it = g_current->occupiers_.find(&a);
    if (it != g_current->occupiers_.end() && ++it->second.completions == 2) {
      g_current->graveyard_.push_back(std::move(it->second.exec));
      g_current->occupiers_.erase(it);
    }
    return;
  }
  if (h && a.get_state() == sg4::Activity::State::FINISHED)
    g_current->dispatch(h);
}

Activities::Handler* Activities::handler(std::function<void()> fn)
{
  Handler* h;
  if (!free_.empty()) {
    h = free_.back();
    free_.pop_back();
  } else {
    handlers_.emplace_back();
    h = &handlers_.back();
  }
  h->fn = std::move(fn);
  ++count_;
  return h;
}

void Activities::dispatch(Handler* h)
{
  // The activity completing now must not lose its last reference inside its own callback: release the
  // previous ones instead.
  graveyard_.clear();
  graveyard_.push_back(std::move(h->keep));
  auto fn = std::move(h->fn);
  free_.push_back(h);
  fn();
}

void Activities::exec(sg4::Host* host, double seconds, std::function<void()> done)
{
  Handler* h = handler(std::move(done));
  auto e = sg4::Exec::init()->set_flops_amount(std::max(seconds, 0.0) * platform::kHostSpeed)->set_host(host);
  e->set_data(h);
  h->keep = e;
  e->start();
}

sg4::Exec* Activities::occupy(sg4::Host* host, double share)
{
  // Enough work never to finish before release(); its end dispatches nothing. SimGrid shares a host between its
  // execs in proportion to their priorities: share / (1 - share) against the other exec's 1 gives it `share`.
  auto e = sg4::Exec::init()->set_flops_amount(1e30)->set_host(host)->set_priority(share / (1.0 - share));
  e->set_data(&occupier_mark_);
  occupiers_[e.get()] = {e, 0};
  e->start();
  return e.get();
}

void Activities::release(sg4::Exec* occupier)
{
  // SimGrid 3.32 keeps a cancelled actor-less exec's share of the host until the host's next completion
  // (checked on a two-exec example): drop its priority to nothing first, so that its share ends now.
  occupier->update_priority(1e-12);
  occupier->cancel();
}

void Activities::delay(double seconds, std::function<void()> done)
{
  ++count_;
  simgrid::kernel::timer::Timer::set(now() + std::max(seconds, 0.0), [fn = std::move(done)]() { fn(); });
}

void Activities::comm(sg4::Host* a, sg4::Host* b, double bytes, std::function<void()> done)
{
  Handler* h = handler(std::move(done));
  auto c = sg4::Comm::sendto_init(a, b)->set_payload_size(uint64_t(std::max(bytes, 1.0)));
  c->set_data(h);
  h->keep = c;
  c->start();
}

void Activities::run(const std::function<void()>& start)
{
  start();
  engine_->run();
}

}  // namespace dtsim::replay
