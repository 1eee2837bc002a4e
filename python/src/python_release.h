// Where the tensors upguard holds are let go: never last on a thread Python does not know.
//
// A tensor whose Python object the program dropped while upguard still held it keeps that
// object alive (PyTorch's PyObject preservation); letting go of the tensor then decrefs the
// object, which takes the GIL. A collective backend's worker thread (gloo's, NCCL's watchdog)
// has no Python thread state: taking the GIL there while the interpreter finalizes ends the
// thread by unwinding it through noexcept destructors, and the process aborts ("terminate
// called without an active exception"). So what such a thread would let go last is kept, and
// let go on the next thread that runs Python (or never, at exit: the memory goes with the
// process).
#pragma once

#include <functional>

namespace upguard::torch_adapter {

// This thread has a Python thread state (it ran Python, or runs it now).
bool OnPythonThread();

// Runs `release` now on a Python thread, else keeps it for ReleaseDeferred on one.
void ReleaseOnPythonThread(std::function<void()> release);

// Runs what was kept, when called on a Python thread (else does nothing). Cheap when nothing
// is kept.
void ReleaseDeferred();

}  // namespace upguard::torch_adapter
