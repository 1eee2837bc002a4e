// The inputs an op writes (OpInfo::written_inputs: declared `(a!)` or measured, see
// undeclared_writes.h): forgotten by the digest cache once written, and recorded as outputs of
// the op when no result returns them.
//
//   ctx->written = {(name, input IValue)...};                 // at op entry (inputs go away)
//   ForgetWrittenInputs(ctx->written);                         // at op exit, before digesting
//   AppendWrittenInputs(ctx->written, fn.outputs(), &batch);   // after the results
#pragma once

#include <ATen/record_function.h>

#include <string_view>
#include <utility>
#include <vector>

#include "ivalue_args.h"

namespace upguard::torch_adapter {

using WrittenInputs = std::vector<std::pair<std::string_view, c10::IValue>>;

// An op that is not recorded: drops its undeclared writes from the digest cache at its entry.
void ForgetUndeclaredWrites(const at::RecordFunction& fn);
void ForgetWrittenInputs(const WrittenInputs& written);
void AppendWrittenInputs(const WrittenInputs& written, const std::vector<c10::IValue>& results,
                         ArgBatch* batch);

}  // namespace upguard::torch_adapter
