// SPDX-License-Identifier: Apache-2.0
/// \file Compiler diagnostics: source spans, user errors and internal errors.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace tl {

/// A range in the user's Python source. line == 0 means "unknown".
struct Span {
  std::string file;
  int line = 0, col = 0, end_line = 0, end_col = 0;
  bool Defined() const { return line > 0; }
};

/// An error in the user's program (shape mismatch, unsupported construct, ...).
/// Carries the span so the front end can render the source line and a caret.
class CompileError : public std::runtime_error {
 public:
  CompileError(const std::string& message, Span span = {})
      : std::runtime_error(message), span_(std::move(span)) {}
  const Span& span() const { return span_; }

 private:
  Span span_;
};

/// A broken compiler invariant: a bug in the compiler, never in the user's program.
class InternalError : public std::runtime_error {
 public:
  explicit InternalError(const std::string& message)
      : std::runtime_error("internal compiler error: " + message) {}
};

namespace detail {
/// Collects a streamed message, then throws on destruction of the full expression.
template <typename E>
class Thrower {
 public:
  explicit Thrower(Span span = {}) : span_(std::move(span)) {}
  template <typename T>
  Thrower& operator<<(const T& value) {
    os_ << value;
    return *this;
  }
  [[noreturn]] void Throw() {
    if constexpr (std::is_same_v<E, CompileError>) {
      throw CompileError(os_.str(), span_);
    } else {
      throw InternalError(os_.str());
    }
  }
  std::ostringstream& stream() { return os_; }

 private:
  Span span_;
  std::ostringstream os_;
};

struct ThrowVoidify {
  template <typename E>
  [[noreturn]] void operator&(Thrower<E>& t) { t.Throw(); }
};
}  // namespace detail

}  // namespace tl

/// Internal invariant check: throws tl::InternalError with the streamed message.
#define TL_ICHECK(cond)                                                       \
  if (cond) {                                                                 \
  } else                                                                      \
    ::tl::detail::ThrowVoidify() & ::tl::detail::Thrower<::tl::InternalError>() \
                                       << __FILE__ << ":" << __LINE__ << ": check `" #cond "` failed: "

/// User-facing error at a span: TL_USER_ERROR(span) << "message";
#define TL_USER_ERROR(span) \
  ::tl::detail::ThrowVoidify() & ::tl::detail::Thrower<::tl::CompileError>(span)
