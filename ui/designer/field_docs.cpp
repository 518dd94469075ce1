// SPDX-License-Identifier: MIT
#include "ui/designer/field_docs.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>

#include <QStringList>

#include <memory>

namespace dasp::generated {
// experiment.proto's FileDescriptorSet with source info (ui/CMakeLists.txt).
extern const unsigned char experiment_docs[];
extern const unsigned long experiment_docs_size;
}  // namespace dasp::generated

namespace dasp::ui {

namespace {

namespace pb = google::protobuf;

// A pool of its own: the generated pool has no comments.
const pb::DescriptorPool* docsPool() {
  static const std::unique_ptr<pb::DescriptorPool> pool = [] {
    auto p = std::make_unique<pb::DescriptorPool>();
    pb::FileDescriptorSet set;
    if (set.ParseFromArray(generated::experiment_docs, static_cast<int>(generated::experiment_docs_size))) {
      for (const pb::FileDescriptorProto& file : set.file()) p->BuildFile(file);
    }
    return p;
  }();
  return pool.get();
}

}  // namespace

QString fieldDoc(const std::string& path) {
  const pb::Descriptor* message = docsPool()->FindMessageTypeByName("dasp.v1.ExperimentSpec");
  const pb::FieldDescriptor* field = nullptr;
  std::size_t from = 0;
  while (message != nullptr && from <= path.size()) {
    const std::size_t dot = path.find('.', from);
    const std::string name = path.substr(from, dot == std::string::npos ? std::string::npos : dot - from);
    field = message->FindFieldByName(name);
    if (field == nullptr) return {};
    if (dot == std::string::npos) break;
    message = field->message_type();
    from = dot + 1;
  }
  if (field == nullptr || message == nullptr) return {};
  pb::SourceLocation where;
  if (!field->GetSourceLocation(&where)) return {};
  // "// One of: ...\n// Default: ..." → one paragraph; the trailing comment when there is
  // no leading one. A field declared on the line right under a commented one shares its
  // comment ("the factor and the backlog size above which it applies").
  std::string text = where.leading_comments.empty() ? where.trailing_comments : where.leading_comments;
  for (int i = field->index() - 1; text.empty() && i >= 0; --i) {
    pb::SourceLocation above;
    const pb::FieldDescriptor* previous = message->field(i);
    if (!previous->GetSourceLocation(&above) || above.start_line != where.start_line - 1) break;
    text = above.leading_comments;
    where = above;
  }
  QStringList lines = QString::fromStdString(text).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
  for (QString& line : lines) line = line.trimmed();
  return lines.join(QLatin1Char(' '));
}

QString fieldToolTip(const std::string& path) {
  const QString doc = fieldDoc(path);
  const QString head = QStringLiteral("<b>%1</b>").arg(QString::fromStdString(path).toHtmlEscaped());
  return doc.isEmpty() ? head : head + QStringLiteral("<br>") + doc.toHtmlEscaped();
}

}  // namespace dasp::ui
