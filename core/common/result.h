// SPDX-License-Identifier: MIT
#pragma once
// Result<T> and Status: how every layer reports an expected failure (a bad file, a bad
// field, a locked store) without throwing across layer boundaries. The message is meant
// for a person: it names the file, the field and the value that were wrong.
// Threading: plain values; safe to move between threads.

#include <optional>
#include <string>
#include <utility>

namespace dasp {

class Status {
 public:
  Status() = default;
  static Status ok() { return Status(); }
  static Status error(std::string message) {
    Status s;
    s.m_failed = true;
    s.m_message = std::move(message);
    return s;
  }
  bool isOk() const { return !m_failed; }
  explicit operator bool() const { return !m_failed; }
  const std::string& message() const { return m_message; }

  // Prefixes the message with context ("runs.sqlite: ..."), keeping it one line.
  Status withContext(const std::string& context) const {
    if (!m_failed) return *this;
    return error(context + ": " + m_message);
  }

 private:
  bool m_failed = false;
  std::string m_message;
};

template <typename T>
class Result {
 public:
  Result(T value) : m_value(std::move(value)) {}  // NOLINT: implicit on purpose
  Result(Status status) : m_status(std::move(status)) {}  // NOLINT: implicit on purpose

  bool isOk() const { return m_value.has_value(); }
  explicit operator bool() const { return isOk(); }
  const Status& status() const { return m_status; }
  const std::string& message() const { return m_status.message(); }

  T& value() & { return *m_value; }
  const T& value() const& { return *m_value; }
  // By value: `for (auto& x : f().value())` must not dangle.
  T value() && { return std::move(*m_value); }
  T* operator->() { return &*m_value; }
  const T* operator->() const { return &*m_value; }
  T& operator*() & { return *m_value; }

 private:
  std::optional<T> m_value;
  Status m_status;
};

}  // namespace dasp
