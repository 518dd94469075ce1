// SPDX-License-Identifier: MIT
// applyOverride (`--set path.to.field=value`) and the learning-rate schedule.
#include "core/spec/spec.h"
#include "core/spec/spec_text.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace dasp {

using namespace spec_text;
namespace pb = google::protobuf;

Status applyOverride(ExperimentSpec& spec, const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    return Status::error("--set '" + assignment + "': expected path.to.field=value");
  }
  const std::string path = trim(assignment.substr(0, eq));
  const std::string value = trim(assignment.substr(eq + 1));
  pb::Message* message = &spec;
  std::string walked;
  std::size_t start = 0;
  while (true) {
    const auto dot = path.find('.', start);
    const std::string name = path.substr(start, dot == std::string::npos ? dot : dot - start);
    walked += (walked.empty() ? "" : ".") + name;
    const auto* field = message->GetDescriptor()->FindFieldByName(name);
    if (field == nullptr) {
      return Status::error("--set " + path + ": no field '" + walked + "' in the spec");
    }
    const auto* reflection = message->GetReflection();
    if (dot != std::string::npos) {
      if (field->cpp_type() != pb::FieldDescriptor::CPPTYPE_MESSAGE || field->is_repeated()) {
        return Status::error("--set " + path + ": '" + walked + "' is not a message");
      }
      message = reflection->MutableMessage(message, field);
      start = dot + 1;
      continue;
    }
    // Leaf: parse the value (comma-separated for repeated fields).
    std::vector<std::string> items;
    if (field->is_repeated()) {
      reflection->ClearField(message, field);
      std::stringstream ss(value);
      std::string item;
      while (std::getline(ss, item, ',')) {
        if (!trim(item).empty()) items.push_back(trim(item));
      }
    } else {
      items.push_back(value);
    }
    for (const auto& item : items) {
      auto badValue = [&](const std::string& what) {
        return Status::error("--set " + path + ": '" + item + "' is not " + what);
      };
      try {
        std::size_t used = 0;
        switch (field->cpp_type()) {
          case pb::FieldDescriptor::CPPTYPE_INT32: {
            const int v = std::stoi(item, &used);
            if (used != item.size()) return badValue("an integer");
            field->is_repeated() ? reflection->AddInt32(message, field, v)
                                 : reflection->SetInt32(message, field, v);
            break;
          }
          case pb::FieldDescriptor::CPPTYPE_INT64: {
            const long long v = std::stoll(item, &used);
            if (used != item.size()) return badValue("an integer");
            field->is_repeated() ? reflection->AddInt64(message, field, v)
                                 : reflection->SetInt64(message, field, v);
            break;
          }
          case pb::FieldDescriptor::CPPTYPE_UINT32: {
            const unsigned long v = std::stoul(item, &used);
            if (used != item.size() || item[0] == '-') return badValue("an unsigned integer");
            field->is_repeated()
                ? reflection->AddUInt32(message, field, static_cast<std::uint32_t>(v))
                : reflection->SetUInt32(message, field, static_cast<std::uint32_t>(v));
            break;
          }
          case pb::FieldDescriptor::CPPTYPE_UINT64: {
            const unsigned long long v = std::stoull(item, &used);
            if (used != item.size() || item[0] == '-') return badValue("an unsigned integer");
            field->is_repeated() ? reflection->AddUInt64(message, field, v)
                                 : reflection->SetUInt64(message, field, v);
            break;
          }
          case pb::FieldDescriptor::CPPTYPE_DOUBLE:
          case pb::FieldDescriptor::CPPTYPE_FLOAT: {
            const double v = std::stod(item, &used);
            if (used != item.size()) return badValue("a number");
            if (field->cpp_type() == pb::FieldDescriptor::CPPTYPE_DOUBLE) {
              field->is_repeated() ? reflection->AddDouble(message, field, v)
                                   : reflection->SetDouble(message, field, v);
            } else {
              field->is_repeated()
                  ? reflection->AddFloat(message, field, static_cast<float>(v))
                  : reflection->SetFloat(message, field, static_cast<float>(v));
            }
            break;
          }
          case pb::FieldDescriptor::CPPTYPE_BOOL: {
            const auto l = lower(item);
            bool v = false;
            if (l == "true" || l == "1" || l == "yes" || l == "on") {
              v = true;
            } else if (!(l == "false" || l == "0" || l == "no" || l == "off")) {
              return badValue("true or false");
            }
            field->is_repeated() ? reflection->AddBool(message, field, v)
                                 : reflection->SetBool(message, field, v);
            break;
          }
          case pb::FieldDescriptor::CPPTYPE_STRING:
            field->is_repeated() ? reflection->AddString(message, field, item)
                                 : reflection->SetString(message, field, item);
            break;
          case pb::FieldDescriptor::CPPTYPE_ENUM: {
            const pb::EnumValueDescriptor* ev = nullptr;
            std::string names;
            for (int i = 0; i < field->enum_type()->value_count(); ++i) {
              const auto* candidate = field->enum_type()->value(i);
              names += (names.empty() ? "" : ", ") + candidate->name();
              if (lower(candidate->name()) == lower(item)) ev = candidate;
            }
            if (ev == nullptr) return badValue("one of " + names);
            field->is_repeated() ? reflection->AddEnum(message, field, ev)
                                 : reflection->SetEnum(message, field, ev);
            break;
          }
          case pb::FieldDescriptor::CPPTYPE_MESSAGE:
            return Status::error("--set " + path + ": '" + walked +
                                 "' is a message; set one of its fields");
        }
      } catch (const std::exception&) {
        return badValue("a valid value for this field");
      }
    }
    return Status::ok();
  }
}

double learningRateAt(const v1::OptimizerSpec& optimizer, std::int64_t step) {
  const double lr = optimizer.lr();
  const auto& decay = optimizer.decay();
  const double every = static_cast<double>(decay.every_steps() > 0 ? decay.every_steps() : 1000);
  switch (decay.kind()) {
    case v1::LrDecay::STEP:
      return lr * std::pow(decay.gamma(), std::floor(static_cast<double>(step) / every));
    case v1::LrDecay::EXPONENTIAL:
      return lr * std::pow(decay.gamma(), static_cast<double>(step) / every);
    default:
      return lr;
  }
}

}  // namespace dasp
