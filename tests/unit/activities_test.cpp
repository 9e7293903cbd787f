// Activities timed alone (a kernel timer) until another one joins their host or link, then handed to SimGrid with
// the work they have left: the dates must be those of max-min sharing from the start, computed here by hand.
#include <gtest/gtest.h>

#include <simgrid/s4u.hpp>

#include "platform/cluster_platform.hpp"
#include "replay/activities.hpp"

namespace {

namespace sg4 = simgrid::s4u;
using dtsim::replay::Activities;

constexpr double kLinkBps = 10e9;  // 1e9 bytes take 0.1 s alone

// A star of hosts, each on its own split-duplex link of no latency (as the cluster's NVLink star).
std::vector<sg4::Host*> star(int hosts)
{
  auto* zone = sg4::create_star_zone("star");
  std::vector<sg4::Host*> out;
  for (int i = 0; i < hosts; ++i) {
    auto* host = zone->create_host("h" + std::to_string(i), dtsim::platform::kHostSpeed)->seal();
    auto* link = zone->create_split_duplex_link("l" + std::to_string(i), kLinkBps)->seal();
    zone->add_route(host->get_netpoint(), nullptr, nullptr, nullptr,
                    {{link, sg4::LinkInRoute::Direction::UP}}, true);
    out.push_back(host);
  }
  zone->seal();
  return out;
}

// Another lane's collective takes `share` of `host` from `from` to `to` (seconds from now).
void occupy_between(Activities& acts, sg4::Host* host, double share, double from, double to)
{
  acts.delay(from, [&acts, host, share, from, to]() {
    auto* occupation = acts.occupy(host, share);
    acts.delay(to - from, [&acts, occupation]() { acts.release(occupation); });
  });
}

// One engine per process: each test runs one simulation.
TEST(Activities, FlowJoinedMidwaySharesItsLinkFromThen)
{
  Activities acts;
  auto h = star(5);
  const double latency = 1e-3;
  double first = -1, second = -1, alone = -1;
  acts.run([&]() {
    // h0 -> h1 sends from 0.001; alone it would end at 0.101.
    acts.flow(h[0], h[1], 1e9, latency, [&]() { first = Activities::now(); });
    // h3 -> h4 shares nothing: latency + bytes / bandwidth.
    acts.flow(h[3], h[4], 1e9, latency, [&]() { alone = Activities::now(); });
    // h2 -> h1 sends from 0.051 on h1's link: from then on each gets 5 GB/s. The first has 0.5e9 bytes left and
    // ends at 0.151; the second has sent 0.5e9 by then, and the rest alone takes 0.05 s more.
    acts.delay(0.05, [&]() { acts.flow(h[2], h[1], 1e9, latency, [&]() { second = Activities::now(); }); });
  });
  EXPECT_NEAR(alone, 0.101, 1e-12);
  EXPECT_NEAR(first, 0.151, 1e-12);
  EXPECT_NEAR(second, 0.201, 1e-12);
  EXPECT_EQ(acts.count(), 4);  // three flows and a delay
}

TEST(Activities, FlowsSharingOnlyOneLinkOfTheirRoutes)
{
  Activities acts;
  auto h = star(4);
  double ab = -1, cb = -1, cd = -1;
  acts.run([&]() {
    // h0 -> h1 and h2 -> h1 share h1's link from 0: 5 GB/s each. h2 -> h3 joins h2's link at 0.02: h2's link
    // then carries two flows of which one is held to 5 GB/s by h1's link, so max-min gives each 5 GB/s (both
    // links saturated). At 0.2 the first two end (1e9 at 5 GB/s); h2 -> h3 has sent 0.9e9 by then, and the last
    // 0.1e9 alone takes 0.01 s.
    acts.flow(h[0], h[1], 1e9, 0, [&]() { ab = Activities::now(); });
    acts.flow(h[2], h[1], 1e9, 0, [&]() { cb = Activities::now(); });
    acts.delay(0.02, [&]() { acts.flow(h[2], h[3], 1e9, 0, [&]() { cd = Activities::now(); }); });
  });
  EXPECT_NEAR(ab, 0.2, 1e-12);
  EXPECT_NEAR(cb, 0.2, 1e-12);
  EXPECT_NEAR(cd, 0.21, 1e-12);
}

TEST(Activities, ExecJoinedMidwaySharesItsHostFromThen)
{
  Activities acts;
  auto h = star(2);
  double first = -1, second = -1, occupied = -1;
  acts.run([&]() {
    // Two one-second kernels on h0, the second from 0.5: each runs at half speed from then on. The first has
    // 0.5 s of work left and ends at 1.5; the second has done 0.5 s by then and ends at 2.0.
    acts.exec(h[0], 1.0, [&]() { first = Activities::now(); });
    acts.delay(0.5, [&]() { acts.exec(h[0], 1.0, [&]() { second = Activities::now(); }); });
    // A one-second kernel on h1 that another lane occupies a quarter of from 0.5 to 1.0: 0.5 + 0.375 s done by
    // 1.0, the last 0.125 s alone.
    acts.exec(h[1], 1.0, [&]() { occupied = Activities::now(); });
    occupy_between(acts, h[1], 0.25, 0.5, 1.0);
  });
  EXPECT_NEAR(first, 1.5, 1e-12);
  EXPECT_NEAR(second, 2.0, 1e-12);
  EXPECT_NEAR(occupied, 1.125, 1e-12);
}

TEST(Activities, OccupiedHostJoinedByAThirdActivity)
{
  Activities acts;
  auto h = star(1);
  double first = -1, second = -1;
  acts.run([&]() {
    // A one-second kernel; from 0.2 another lane's collective occupies a quarter of the host (the kernel runs at
    // 0.75); from 0.4 a second kernel of 0.5 s joins, and the three share by priority (1, 1 and 1/3): 3/7 each for
    // the kernels until the occupation ends at 0.8, then half each. By 0.8 the first has done 0.2 + 0.15 + 1.2/7
    // and the second 1.2/7; the second ends 0.5 - 1.2/7 later at half speed, the first runs its last 0.15 alone.
    acts.exec(h[0], 1.0, [&]() { first = Activities::now(); });
    occupy_between(acts, h[0], 0.25, 0.2, 0.8);
    acts.delay(0.4, [&]() { acts.exec(h[0], 0.5, [&]() { second = Activities::now(); }); });
  });
  const double second_left = 0.5 - 1.2 / 7;
  EXPECT_NEAR(second, 0.8 + 2 * second_left, 1e-9);
  EXPECT_NEAR(first, 0.8 + 2 * second_left + 0.15, 1e-9);
}

TEST(Activities, TwoOccupationsOfAKernelTimedAlone)
{
  Activities acts;
  auto h = star(1);
  double end = -1;
  acts.run([&]() {
    // A one-second kernel (a data-parallel collective's SMs and a TP-overlap collective's, say): a quarter of the
    // host taken from 0.2 to 0.8, half of it from 0.4 to 0.6. By priority (1 against 1/3 and 1) the kernel gets
    // 3/7 of the host while both run, 3/4 while one does: 0.2 + 0.15 + 0.6/7 + 0.15 done by 0.8, the rest alone.
    acts.exec(h[0], 1.0, [&]() { end = Activities::now(); });
    occupy_between(acts, h[0], 0.25, 0.2, 0.8);
    occupy_between(acts, h[0], 0.5, 0.4, 0.6);
  });
  EXPECT_NEAR(end, 0.8 + (1.0 - 0.2 - 0.15 - 0.6 / 7 - 0.15), 1e-12);
}


// Own events set from inside SimGrid's loop, earlier than its next event, must run at their dates, and SimGrid's
// clock must catch up with own events before it starts an activity.
TEST(Activities, OwnEventsInterleaveWithSharedFlows)
{
  Activities acts;
  auto h = star(5);
  double ab = -1, cb = -1, inner = -1, after = -1, late = -1;
  acts.run([&]() {
    // Two flows share h1's link from 0: 5 GB/s each, both end at 0.2 (SimGrid's). The first flow's end sets a
    // delay of 0.01 s from inside SimGrid's loop: 0.21.
    acts.flow(h[0], h[1], 1e9, 0, [&]() {
      ab = Activities::now();
      acts.delay(0.01, [&]() { inner = Activities::now(); });
    });
    acts.flow(h[2], h[1], 1e9, 0, [&]() { cb = Activities::now(); });
    // A delay outside SimGrid ending while the flows share, then a flow alone on other links: 0.05 + 0.05.
    acts.delay(0.05, [&]() { acts.flow(h[3], h[4], 0.5e9, 0, [&]() { after = Activities::now(); }); });
    // Nothing is left in SimGrid after 0.21: at 0.5, a flow on h1's link again shares with one more, started by
    // SimGrid at 0.5 although its clock stood at 0.21 (1e9 each at 5 GB/s: 0.7).
    acts.delay(0.5, [&]() {
      acts.flow(h[0], h[1], 1e9, 0, [&]() { late = Activities::now(); });
      acts.flow(h[3], h[1], 1e9, 0, []() {});
    });
  });
  EXPECT_NEAR(ab, 0.2, 1e-12);
  EXPECT_NEAR(cb, 0.2, 1e-12);
  EXPECT_NEAR(inner, 0.21, 1e-12);
  EXPECT_NEAR(after, 0.1, 1e-12);
  EXPECT_NEAR(late, 0.7, 1e-12);
}

// A sequence timed as a whole while its resources are free; another activity on one of them splits it: the
// segment running then goes on alone (or shares, if the newcomer uses its own resources), the rest one at a time.
TEST(Activities, SequenceSplitWhereAnotherActivityStarts)
{
  Activities acts;
  auto h = star(4);
  std::vector<double> ends;
  double small = -1, big = -1;
  acts.run([&]() {
    using Segment = Activities::Segment;
    // Alone: a 0.1 s kernel on h0, 1e9 bytes h0 -> h1 (0.1 s), a 0.05 s delay: 0.1, 0.2, 0.25.
    acts.sequence({{Segment::Kind::Exec, h[0], nullptr, 0.1, 0.0},
                   {Segment::Kind::Flow, h[0], h[1], 1e9, 0.0},
                   {Segment::Kind::Delay, nullptr, nullptr, 0.05, 0.0}},
                  [&](const std::vector<double>& e) { ends = e; });
    // At 0.05, during the kernel, 0.1e9 bytes h3 -> h1 use h1's link, which nothing else uses then: alone, 0.06.
    // The kernel goes on alone to 0.1; the flow and the delay are then free again.
    acts.delay(0.05, [&]() { acts.flow(h[3], h[1], 0.1e9, 0, [&]() { small = Activities::now(); }); });
    // At 0.15, halfway through the sequence's flow, 1e9 bytes h2 -> h1 share h1's link: 5 GB/s each, the
    // sequence's 0.5e9 left end at 0.25, its delay at 0.3; the newcomer has 0.5e9 left at 0.25, alone 0.05 s.
    acts.delay(0.15, [&]() { acts.flow(h[2], h[1], 1e9, 0, [&]() { big = Activities::now(); }); });
  });
  ASSERT_EQ(ends.size(), 3u);
  EXPECT_NEAR(ends[0], 0.1, 1e-12);
  EXPECT_NEAR(ends[1], 0.25, 1e-12);
  EXPECT_NEAR(ends[2], 0.3, 1e-12);
  EXPECT_NEAR(small, 0.06, 1e-12);
  EXPECT_NEAR(big, 0.3, 1e-12);
  EXPECT_EQ(acts.count(), 7);  // the sequence's three segments, two flows, two delays
}

// A kernel's end moves each time an occupation begins or ends (its pending end leaves the queue, a new one is set),
// among own events set in no particular order: each runs at its date, in date order.
TEST(Activities, MovedEndsLeaveTheQueueAndTheRestKeepsItsOrder)
{
  Activities acts;
  auto h = star(1);
  double kernel = -1;
  std::vector<double> fired;
  acts.run([&]() {
    // A one-second kernel occupied half from 0.1 + 0.2 k to 0.2 + 0.2 k, k = 0..4: each window does 0.05 s of its
    // work instead of 0.1, so it ends 5 x 0.05 s late, at 1.25.
    acts.exec(h[0], 1.0, [&]() { kernel = Activities::now(); });
    for (int k = 0; k < 5; ++k)
      occupy_between(acts, h[0], 0.5, 0.1 + 0.2 * k, 0.2 + 0.2 * k);
    // Delays of 0.0625 m for m = 1..20, set in the order 7m mod 20 (+1): they fire at m x 0.0625, in that order.
    for (int i = 0; i < 20; ++i) {
      const double at = 0.0625 * ((7 * i) % 20 + 1);
      acts.delay(at, [&fired]() { fired.push_back(Activities::now()); });
    }
  });
  EXPECT_NEAR(kernel, 1.25, 1e-12);
  ASSERT_EQ(fired.size(), 20u);
  for (size_t m = 0; m < fired.size(); ++m)
    EXPECT_DOUBLE_EQ(fired[m], 0.0625 * double(m + 1));
}

// Two flows end together in one SimGrid round with no own event pending: the first end starts a kernel timed alone
// (an own event, so SimGrid's loop stops at the end of that round), the second a kernel on the same host, which
// takes the first over into SimGrid (its own event leaves the queue). The replay must go on: the two one-second
// kernels share the host from 0.2 and end at 2.2, and the delays of 0.1 s they start then end at 2.3.
TEST(Activities, SimGridStoppedForAnEventCancelledInTheSameRound)
{
  Activities acts;
  auto h = star(3);
  double first = -1, second = -1;
  auto kernel_then_delay = [&](double& at) {
    acts.exec(h[2], 1.0, [&]() { acts.delay(0.1, [&]() { at = Activities::now(); }); });
  };
  acts.run([&]() {
    acts.flow(h[0], h[1], 1e9, 0, [&]() { kernel_then_delay(first); });
    acts.flow(h[2], h[1], 1e9, 0, [&]() { kernel_then_delay(second); });
  });
  EXPECT_NEAR(first, 2.3, 1e-12);
  EXPECT_NEAR(second, 2.3, 1e-12);
}
}  // namespace
