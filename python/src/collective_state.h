// The life of one collective call (collectives.h) as a state machine: two things finish in
// either order, the op (it returns and is recorded, or is not) and the work (the backend
// completes it, and then its written tensors are digested), and the call's Collective record is
// written once both have (or, at the step's end, as not completed). Torch-free, so the table is
// tested on its own (collective_state_test.cc).
//
//   CallState state = CallState::kLaunched;
//   state = NextCallState(state, CallEvent::kOpReturned);  // kReturned
//
// The events:
//   kOpReturned            the op returned and Record() wrote it
//   kOpReturnedUnrecorded  the op returned unrecorded (recording off, a step not recorded, ...)
//   kWorkCompleted         the backend's scope ended, or a reader found the work's future done
//   kDigested              the completion has digested the written tensors (or chose not to)
//   kWrittenIncomplete     its record was written as not completed (the step ended first, or
//                          the work failed): only for a call that has returned
//   kGivenUp               the step ended, no scope took it and no future runs: it never will
//                          complete visibly, so it stops counting as in flight
//   kReset                 a new recording starts
//
// The transitions; any other event leaves the state as it is. "(*)": the Collective record is
// written on the way, as completed unless the work failed.
//
//   kLaunched                 --OpReturned-------------> kReturned
//                             --OpReturnedUnrecorded---> kSettled
//                             --WorkCompleted----------> kCompleting
//   kReturned                 --WorkCompleted----------> kCompletingAfterReturn
//                             --WrittenIncomplete------> kSettled
//   kSettled                  --WorkCompleted----------> kFinished
//                             --GivenUp----------------> kFinished
//   kCompleting               --OpReturned-------------> kReturnedWhileCompleting
//                             --OpReturnedUnrecorded---> kFinished
//                             --Digested---------------> kCompleted
//   kCompletingAfterReturn,   --Digested (*)-----------> kFinished
//   kReturnedWhileCompleting  --WrittenIncomplete------> kFinished
//   kCompleted                --OpReturned (*)---------> kFinished
//                             --OpReturnedUnrecorded---> kFinished
//   any state                 --Reset------------------> kFinished
//
// kLaunched, kReturned and kSettled are the states in which the work runs: the call's tensors
// are in flight. A call leaves the open list in kFinished.
//
// An ignored event is either a benign race (a second completion: the scope ends after a reader
// completed the call; a digest that ends after the step's end wrote the call) or cannot happen
// (an op that returns twice); in both cases the state stays as it is, and the training is never
// stopped for it.
#pragma once

#include <cstdint>

namespace upguard::torch_adapter {

enum class CallState : uint8_t {
  kLaunched,    // the op runs; the work has not completed
  kReturned,    // the op returned, recorded; the work has not completed
  kSettled,     // its record is written (as not completed) or never will be; the work still runs
  kCompleting,  // the work completed while the op runs; its tensors are being digested
  kCompletingAfterReturn,    // the op returned, then the work completed; being digested
  kReturnedWhileCompleting,  // the work completed, then the op returned while it is digested
  kCompleted,                // the work completed and is digested; the op still runs
  kFinished,                 // record written or never to be, work completed: forgotten
};

enum class CallEvent : uint8_t {
  kOpReturned,
  kOpReturnedUnrecorded,
  kWorkCompleted,
  kDigested,
  kWrittenIncomplete,
  kGivenUp,
  kReset,
};

// The work may still write the call's tensors: they are "in flight" (collectives.h InFlight).
constexpr bool WorkRunning(CallState state) {
  return state == CallState::kLaunched || state == CallState::kReturned ||
         state == CallState::kSettled;
}

// A completion is digesting the tensors the work wrote; it writes the record when done.
constexpr bool Digesting(CallState state) {
  return state == CallState::kCompleting || state == CallState::kCompletingAfterReturn ||
         state == CallState::kReturnedWhileCompleting;
}

// The state after `event` (the table above); `state` itself when the event is ignored.
constexpr CallState NextCallState(CallState state, CallEvent event) {
  using S = CallState;
  using E = CallEvent;
  if (event == E::kReset) return S::kFinished;
  switch (state) {
    case S::kLaunched:
      if (event == E::kOpReturned) return S::kReturned;
      if (event == E::kOpReturnedUnrecorded) return S::kSettled;
      if (event == E::kWorkCompleted) return S::kCompleting;
      break;
    case S::kReturned:
      if (event == E::kWorkCompleted) return S::kCompletingAfterReturn;
      if (event == E::kWrittenIncomplete) return S::kSettled;
      break;
    case S::kSettled:
      if (event == E::kWorkCompleted || event == E::kGivenUp) return S::kFinished;
      break;
    case S::kCompleting:
      if (event == E::kOpReturned) return S::kReturnedWhileCompleting;
      if (event == E::kOpReturnedUnrecorded) return S::kFinished;
      if (event == E::kDigested) return S::kCompleted;
      break;
    case S::kCompletingAfterReturn:
    case S::kReturnedWhileCompleting:
      if (event == E::kDigested || event == E::kWrittenIncomplete) return S::kFinished;
      break;
    case S::kCompleted:
      if (event == E::kOpReturned || event == E::kOpReturnedUnrecorded) return S::kFinished;
      break;
    case S::kFinished:
      break;
  }
  return state;
}

// Whether `event` moves a call in `state` (the table has a row for it).
constexpr bool Accepts(CallState state, CallEvent event) {
  return NextCallState(state, event) != state;
}

}  // namespace upguard::torch_adapter
