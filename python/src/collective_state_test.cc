#include "collective_state.h"

#include <gtest/gtest.h>

#include <initializer_list>

namespace upguard::torch_adapter {
namespace {

using S = CallState;
using E = CallEvent;

constexpr S kStates[] = {S::kLaunched,
                         S::kReturned,
                         S::kSettled,
                         S::kCompleting,
                         S::kCompletingAfterReturn,
                         S::kReturnedWhileCompleting,
                         S::kCompleted,
                         S::kFinished};
constexpr E kEvents[] = {E::kOpReturned, E::kOpReturnedUnrecorded, E::kWorkCompleted,
                         E::kDigested,   E::kWrittenIncomplete,    E::kGivenUp,
                         E::kReset};

S StateAfter(std::initializer_list<E> events) {
  S state = S::kLaunched;
  for (E event : events) state = NextCallState(state, event);
  return state;
}

// Every order in which the op and the work can finish ends the call.
TEST(CollectiveStateTest, EveryOrderEndsFinished) {
  EXPECT_EQ(StateAfter({E::kOpReturned, E::kWorkCompleted, E::kDigested}), S::kFinished);
  EXPECT_EQ(StateAfter({E::kWorkCompleted, E::kOpReturned, E::kDigested}), S::kFinished);
  EXPECT_EQ(StateAfter({E::kWorkCompleted, E::kDigested, E::kOpReturned}), S::kFinished);
  EXPECT_EQ(StateAfter({E::kOpReturnedUnrecorded, E::kWorkCompleted}), S::kFinished);
  EXPECT_EQ(StateAfter({E::kWorkCompleted, E::kOpReturnedUnrecorded}), S::kFinished);
  EXPECT_EQ(StateAfter({E::kWorkCompleted, E::kDigested, E::kOpReturnedUnrecorded}), S::kFinished);
  // The step ends before the work completes: written as not completed, then given up or
  // completed later.
  EXPECT_EQ(StateAfter({E::kOpReturned, E::kWrittenIncomplete, E::kGivenUp}), S::kFinished);
  EXPECT_EQ(StateAfter({E::kOpReturned, E::kWrittenIncomplete, E::kWorkCompleted}), S::kFinished);
  // The step ends while the completion digests: the digest's end changes nothing.
  EXPECT_EQ(StateAfter({E::kOpReturned, E::kWorkCompleted, E::kWrittenIncomplete, E::kDigested}),
            S::kFinished);
  // A work that failed before its op returned is written at the return.
  EXPECT_EQ(StateAfter({E::kWorkCompleted, E::kOpReturned, E::kWrittenIncomplete}), S::kFinished);
}

TEST(CollectiveStateTest, TheStatesOnTheWay) {
  EXPECT_EQ(StateAfter({E::kOpReturned}), S::kReturned);
  EXPECT_EQ(StateAfter({E::kOpReturnedUnrecorded}), S::kSettled);
  EXPECT_EQ(StateAfter({E::kWorkCompleted}), S::kCompleting);
  EXPECT_EQ(StateAfter({E::kWorkCompleted, E::kDigested}), S::kCompleted);
  EXPECT_EQ(StateAfter({E::kOpReturned, E::kWorkCompleted}), S::kCompletingAfterReturn);
  EXPECT_EQ(StateAfter({E::kWorkCompleted, E::kOpReturned}), S::kReturnedWhileCompleting);
  EXPECT_EQ(StateAfter({E::kOpReturned, E::kWrittenIncomplete}), S::kSettled);
}

// An event the table has no row for leaves the state as it is: a second completion, a second
// return, a digest after the step's end wrote the call.
TEST(CollectiveStateTest, IgnoredEventsKeepTheState) {
  EXPECT_EQ(NextCallState(S::kCompleting, E::kWorkCompleted), S::kCompleting);
  EXPECT_EQ(NextCallState(S::kReturned, E::kOpReturned), S::kReturned);
  EXPECT_EQ(NextCallState(S::kSettled, E::kOpReturned), S::kSettled);
  EXPECT_EQ(NextCallState(S::kLaunched, E::kDigested), S::kLaunched);
  EXPECT_EQ(NextCallState(S::kLaunched, E::kGivenUp), S::kLaunched);
  EXPECT_FALSE(Accepts(S::kCompleted, E::kWrittenIncomplete));
  for (E event : kEvents) EXPECT_EQ(NextCallState(S::kFinished, event), S::kFinished);
}

TEST(CollectiveStateTest, ResetFinishesEveryState) {
  for (S state : kStates) EXPECT_EQ(NextCallState(state, E::kReset), S::kFinished);
}

// The in-flight count drops once per call: no event takes a call whose work stopped running
// back to a running state.
TEST(CollectiveStateTest, TheWorkNeverRunsAgain) {
  for (S state : kStates) {
    if (WorkRunning(state)) continue;
    for (E event : kEvents) EXPECT_FALSE(WorkRunning(NextCallState(state, event)));
  }
  EXPECT_TRUE(WorkRunning(S::kLaunched));
  EXPECT_TRUE(WorkRunning(S::kReturned));
  EXPECT_TRUE(WorkRunning(S::kSettled));
}

// Only a call whose op returned recorded and whose record is not written yet is written as not
// completed at the step's end.
TEST(CollectiveStateTest, WrittenIncompleteOnlyFromReturnedUnwritten) {
  for (S state : kStates) {
    const bool expected = state == S::kReturned || state == S::kCompletingAfterReturn ||
                          state == S::kReturnedWhileCompleting;
    EXPECT_EQ(Accepts(state, E::kWrittenIncomplete), expected);
  }
}

}  // namespace
}  // namespace upguard::torch_adapter
