// Parser half of text_format.h: one pass over the lines, feeding a TraceWriter. An op (or a
// collective) is held until the next non-argument line, because its "in"/"out" lines follow it.
#include <nlohmann/json.hpp>

#include "trace/text_format.h"
#include "trace/text_syntax.h"
#include "trace/writer.h"

namespace upguard {
namespace {

using text::TextToken;

bool ParseUnreadReason(std::string_view text, UnreadReason* reason) {
  for (uint8_t code = 0; code <= static_cast<uint8_t>(kMaxUnreadReason); ++code) {
    if (UnreadReasonName(static_cast<UnreadReason>(code)) == text) {
      *reason = static_cast<UnreadReason>(code);
      return true;
    }
  }
  return false;
}

class TextParser {
 public:
  TextParser(std::string_view source, const std::string& out_path)
      : source_(source), out_path_(out_path) {}

  Status ParseLine(std::string_view line);
  Status Finish();
  void set_line_number(size_t line_number) { line_number_ = line_number; }

 private:
  Status Error(const std::string& what) const {
    return InvalidArgument(std::string(source_) + ":" + std::to_string(line_number_) + ": " + what);
  }
  Status EnsureWriter(std::string_view meta_json);
  Status FlushOp();
  Status ParseOp(const std::vector<TextToken>& tokens);
  Status ParseCollective(const std::vector<TextToken>& tokens);
  Status ParseArg(const std::vector<TextToken>& tokens);
  Status ParseArgFields(const std::vector<TextToken>& tokens, size_t first, ArgRecord* arg);
  Status ParseStats(std::string_view value, TensorStats* stats);

  std::string_view source_;
  std::string out_path_;
  size_t line_number_ = 0;
  std::unique_ptr<TraceWriter> writer_;
  OpRecord op_;
  bool has_op_ = false;
  CollectiveInfo collective_;  // held like op_; its "out" lines follow it
  uint64_t collective_op_seq_ = 0;
  bool has_collective_ = false;
  bool ended_ = false;
  uint32_t default_step_ = 0;
  std::vector<TextToken> tokens_;
};

Status TextParser::EnsureWriter(std::string_view meta_json) {
  if (writer_ != nullptr) return Status::Ok();
  ASSIGN_OR_RETURN(writer_, TraceWriter::Create(out_path_, meta_json));
  return Status::Ok();
}

// Writes the held op or collective.
Status TextParser::FlushOp() {
  if (has_collective_) {
    has_collective_ = false;
    return writer_->WriteCollective(collective_op_seq_, collective_);
  }
  if (!has_op_) return Status::Ok();
  has_op_ = false;
  return writer_->WriteOp(op_);
}

Status TextParser::ParseLine(std::string_view line) {
  const size_t start = line.find_first_not_of(" \t\r");
  if (start == std::string_view::npos) return Status::Ok();
  line.remove_prefix(start);
  if (line.substr(0, 5) == "meta " || line.substr(0, 5) == "meta\t") {
    if (writer_ != nullptr) return Error("'meta' must be the first line");
    const auto meta = nlohmann::ordered_json::parse(line.substr(5), nullptr, false);
    if (!meta.is_object()) return Error("'meta' wants a JSON object on the rest of the line");
    return EnsureWriter(meta.dump());
  }
  std::string error;
  if (!text::TokenizeLine(line, &tokens_, &error)) return Error(error);
  if (tokens_.empty()) return Status::Ok();
  if (ended_) return Error("nothing may follow 'end' or 'stopped'");
  RETURN_IF_ERROR(EnsureWriter("{}"));
  const std::string& verb = tokens_[0].text;
  if (verb == "in" || verb == "out") return ParseArg(tokens_);
  RETURN_IF_ERROR(FlushOp());
  if (verb == "op") return ParseOp(tokens_);
  if (verb == "collective") return ParseCollective(tokens_);
  if (verb == "stepend") {
    // "stepend STEP [fingerprint] [digest=HEX|@LABEL]": a fingerprint step (StepEnd flag);
    // the digest forces a StepEnd digest (tests only).
    constexpr const char* kWant = "want 'stepend STEP [fingerprint] [digest=HEX]'";
    uint64_t step;
    if (tokens_.size() < 2 || tokens_.size() > 4 ||
        !text::ParseUint(tokens_[1].text, UINT32_MAX, &step)) {
      return Error(kWant);
    }
    default_step_ = static_cast<uint32_t>(step) + 1;
    size_t next = 2;
    uint64_t flags = 0;
    if (next < tokens_.size() && tokens_[next].text == "fingerprint") {
      flags |= kStepFingerprint;
      ++next;
    }
    if (next == tokens_.size()) return writer_->EndStep(static_cast<uint32_t>(step), flags);
    Digest128 digest;
    if (next + 1 != tokens_.size() || !tokens_[next].is_key_value() ||
        tokens_[next].key() != "digest" || !text::ParseDigestText(tokens_[next].value(), &digest)) {
      return Error(std::string(kWant) + " (the digest: 32 hex digits or @LABEL)");
    }
    return writer_->EndStepWithDigest(static_cast<uint32_t>(step), digest, flags);
  }
  if (verb == "end") {
    if (tokens_.size() != 1) return Error("'end' takes no arguments");
    ended_ = true;
    return writer_->Close();
  }
  if (verb == "stopped") {
    // "stopped STEP [reason=disk_full]": the Stopped record in place of End (trace.md §5.7).
    constexpr const char* kWant =
        "want 'stopped STEP [reason=error|disk_full|file_too_large|max_bytes]'";
    uint64_t step;
    StoppedRecord stopped;
    if (tokens_.size() < 2 || tokens_.size() > 3 ||
        !text::ParseUint(tokens_[1].text, UINT32_MAX, &step) ||
        (tokens_.size() == 3 && (!tokens_[2].is_key_value() || tokens_[2].key() != "reason" ||
                                 !ParseStopReasonToken(tokens_[2].value(), &stopped.reason)))) {
      return Error(kWant);
    }
    stopped.step = static_cast<uint32_t>(step);
    ended_ = true;
    return writer_->Close(&stopped);
  }
  return Error("unknown line '" + verb +
               "' (want meta, op, in, out, collective, stepend, end or stopped)");
}

// "[0,1,2]" or "[]".
bool ParseRanks(std::string_view value, std::vector<int32_t>* ranks) {
  if (value.size() < 2 || value.front() != '[' || value.back() != ']') return false;
  value = value.substr(1, value.size() - 2);
  ranks->clear();
  while (!value.empty()) {
    const size_t comma = value.find(',');
    uint64_t rank = 0;
    if (!text::ParseUint(value.substr(0, comma), INT32_MAX, &rank)) return false;
    ranks->push_back(static_cast<int32_t>(rank));
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
    if (value.empty()) return false;  // a trailing comma
  }
  return true;
}

Status TextParser::ParseCollective(const std::vector<TextToken>& tokens) {
  collective_ = CollectiveInfo{};
  collective_.completed = true;
  if (writer_->ops_written() == 0) return Error("'collective' must follow an 'op' line");
  collective_op_seq_ = writer_->ops_written() - 1;
  for (size_t token_idx = 1; token_idx < tokens.size(); ++token_idx) {
    const TextToken& token = tokens[token_idx];
    if (!token.is_key_value()) {
      return Error("collective wants KEY=VALUE fields, got '" + token.text + "'");
    }
    const std::string_view key = token.key();
    const std::string_view value = token.value();
    uint64_t number = 0;
    if (key == "group") {
      collective_.group = writer_->Intern(value);
    } else if (key == "ranks") {
      if (!ParseRanks(value, &collective_.ranks)) return Error("bad ranks (want [0,1,...] or [])");
    } else if (key == "completed") {
      if (value != "0" && value != "1") return Error("bad completed (want 1 or 0)");
      collective_.completed = value == "1";
    } else if (key == "group_rank" || key == "group_size") {
      if (!text::ParseUint(value, UINT32_MAX, &number)) return Error("bad " + std::string(key));
      (key == "group_rank" ? collective_.group_rank : collective_.group_size) =
          static_cast<uint32_t>(number);
    } else if (key == "op" || key == "seq" || key == "ops_before_completion") {
      if (!text::ParseUint(value, UINT64_MAX, &number)) return Error("bad " + std::string(key));
      (key == "op"    ? collective_op_seq_
       : key == "seq" ? collective_.seq
                      : collective_.ops_before_completion) = number;
    } else {
      return Error("unknown collective field '" + std::string(key) + "'");
    }
  }
  has_collective_ = true;
  return Status::Ok();
}

Status TextParser::ParseOp(const std::vector<TextToken>& tokens) {
  op_ = OpRecord{};
  op_.step = default_step_;
  bool has_name = false;
  for (size_t token_idx = 1; token_idx < tokens.size(); ++token_idx) {
    const TextToken& token = tokens[token_idx];
    if (!token.is_key_value()) return Error("op wants KEY=VALUE fields, got '" + token.text + "'");
    const std::string_view key = token.key();
    const std::string_view value = token.value();
    uint64_t number = 0;
    if (key == "name") {
      op_.op = writer_->Intern(value);
      has_name = true;
    } else if (key == "module") {
      op_.module = writer_->Intern(value);
    } else if (key == "site") {
      op_.call_site = writer_->Intern(value);
    } else if (key == "node") {
      op_.node = writer_->Intern(value);
    } else if (key == "step" || key == "depth") {
      if (!text::ParseUint(value, UINT32_MAX, &number)) return Error("bad " + std::string(key));
      (key == "step" ? op_.step : op_.depth) = static_cast<uint32_t>(number);
    } else if (key == "phase") {
      bool found = false;
      for (uint8_t code = 0; code <= static_cast<uint8_t>(kMaxPhase) && !found; ++code) {
        found = PhaseName(static_cast<Phase>(code)) == value;
        if (found) op_.phase = static_cast<Phase>(code);
      }
      if (!found) return Error("unknown phase '" + std::string(value) + "'");
    } else {
      return Error("unknown op field '" + std::string(key) + "'");
    }
  }
  if (!has_name) return Error("op needs name=OP_NAME");
  has_op_ = true;
  return Status::Ok();
}

Status TextParser::ParseArg(const std::vector<TextToken>& tokens) {
  if (has_collective_ && tokens[0].text == "in") {
    return Error("a collective has outputs only: 'out' lines");
  }
  if (!has_op_ && !has_collective_) {
    return Error(tokens[0].text == "in" ? "'in' must follow an 'op' line"
                                        : "'out' must follow an 'op' or 'collective' line");
  }
  ArgRecord arg;
  size_t next = 1;
  auto is_kind = [](const TextToken& token, ArgKind* kind) {
    for (uint8_t code = 1; code <= static_cast<uint8_t>(kMaxArgKind); ++code) {
      if (!token.quoted && ArgKindName(static_cast<ArgKind>(code)) == token.text) {
        *kind = static_cast<ArgKind>(code);
        return true;
      }
    }
    return false;
  };
  if (next < tokens.size() && !is_kind(tokens[next], &arg.kind)) {
    arg.name = writer_->Intern(tokens[next].text);
    ++next;
  }
  if (next >= tokens.size() || !is_kind(tokens[next], &arg.kind)) {
    return Error("want '" + tokens[0].text +
                 " [NAME] KIND ...' with KIND tensor, scalar, alias, uninit, none, opaque or unread");
  }
  ++next;
  const bool has_shape = arg.kind != ArgKind::kScalar && arg.kind != ArgKind::kNone;
  if (has_shape &&
      (next >= tokens.size() || !text::ParseShapeText(tokens[next].text, &arg.dtype, &arg.shape))) {
    return Error("want DTYPE[DIMS] after '" + std::string(ArgKindName(arg.kind)) +
                 "', such as float32[4,64] or int64[]");
  }
  if (has_shape) ++next;
  if (arg.kind == ArgKind::kScalar) {
    if (next >= tokens.size()) return Error("want 'scalar TEXT' (quote it: scalar '1.0')");
    arg.text = writer_->Intern(tokens[next].text);
    ++next;
  }
  RETURN_IF_ERROR(ParseArgFields(tokens, next, &arg));
  if (has_collective_) {
    collective_.outputs.push_back(std::move(arg));
  } else {
    (tokens[0].text == "in" ? op_.inputs : op_.outputs).push_back(std::move(arg));
  }
  return Status::Ok();
}

// The KEY=VALUE fields after an argument's kind and shape (or scalar text): label= for every
// kind, digest= (required) and stats= for a tensor.
Status TextParser::ParseArgFields(const std::vector<TextToken>& tokens, size_t first,
                                  ArgRecord* arg) {
  const bool tensor = arg->kind == ArgKind::kTensor;
  bool has_digest = false;
  for (size_t token_idx = first; token_idx < tokens.size(); ++token_idx) {
    const TextToken& token = tokens[token_idx];
    if (token.is_key_value() && token.key() == "label") {
      if (has_collective_) {
        return Error("a collective's outputs take no label= (its op's outputs keep theirs)");
      }
      if (token.value().empty()) return Error("an empty label= is no label: leave it out");
      arg->label = writer_->Intern(token.value());
    } else if (arg->kind == ArgKind::kUnread && token.is_key_value() && token.key() == "reason") {
      if (!ParseUnreadReason(token.value(), &arg->unread)) {
        return Error("bad reason '" + std::string(token.value()) +
                     "' (want device, layout, storage, dtype, in_flight or unknown)");
      }
    } else if (arg->kind == ArgKind::kUnread && token.is_key_value() && token.key() == "detail") {
      arg->text = writer_->Intern(token.value());
    } else if (!tensor) {
      return Error("unexpected '" + token.text + "' (" + std::string(ArgKindName(arg->kind)) +
                   (arg->kind == ArgKind::kUnread ? " takes reason=, detail= and label=)"
                                                  : " takes only label=)"));
    } else if (token.is_key_value() && token.key() == "digest") {
      if (!text::ParseDigestText(token.value(), &arg->digest)) {
        return Error("bad digest '" + std::string(token.value()) +
                     "' (want 32 hex digits or @LABEL)");
      }
      has_digest = true;
    } else if (token.is_key_value() && token.key() == "stats") {
      RETURN_IF_ERROR(ParseStats(token.value(), &arg->stats));
      arg->has_stats = true;
    } else {
      return Error("unexpected '" + token.text + "' (a tensor takes digest=, stats= and label=)");
    }
  }
  if (tensor && !has_digest) return Error("a tensor needs digest=HEX or digest=@LABEL");
  return Status::Ok();
}

Status TextParser::ParseStats(std::string_view value, TensorStats* stats) {
  while (!value.empty()) {
    const size_t comma = value.find(',');
    const std::string_view item = value.substr(0, comma);
    const size_t colon = item.find(':');
    const std::string_view key = item.substr(0, colon);
    const std::string_view number =
        colon == std::string_view::npos ? std::string_view() : item.substr(colon + 1);
    double* real = key == "min"    ? &stats->min
                   : key == "max"  ? &stats->max
                   : key == "mean" ? &stats->mean
                   : key == "l2"   ? &stats->l2
                                   : nullptr;
    uint64_t* count = key == "finite" ? &stats->finite_count
                      : key == "nan"  ? &stats->nan_count
                      : key == "pinf" ? &stats->pos_inf_count
                      : key == "ninf" ? &stats->neg_inf_count
                                      : nullptr;
    const bool ok = real != nullptr    ? text::ParseDouble(number, real)
                    : count != nullptr ? text::ParseUint(number, UINT64_MAX, count)
                                       : false;
    if (!ok) {
      return Error("bad stats item '" + std::string(item) +
                   "' (want min:X,max:X,mean:X,l2:X,finite:N,nan:N,pinf:N,ninf:N)");
    }
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return Status::Ok();
}

Status TextParser::Finish() {
  RETURN_IF_ERROR(EnsureWriter("{}"));
  RETURN_IF_ERROR(FlushOp());
  if (ended_) return Status::Ok();
  return writer_->Flush();  // no End record: an incomplete trace, on purpose
}

}  // namespace

Status WriteTraceFromText(std::string_view text, std::string_view source,
                          const std::string& out_path) {
  TextParser parser(source, out_path);
  size_t line_number = 0;
  while (!text.empty()) {
    const size_t newline = text.find('\n');
    parser.set_line_number(++line_number);
    RETURN_IF_ERROR(parser.ParseLine(text.substr(0, newline)));
    if (newline == std::string_view::npos) break;
    text.remove_prefix(newline + 1);
  }
  return parser.Finish();
}

}  // namespace upguard
