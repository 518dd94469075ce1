// SPDX-License-Identifier: MIT
#include "ui/runs/run_table_model.h"

#include "core/common/durations.h"
#include "core/spec/spec.h"
#include "ui/charts/run_data.h"

#include <QDateTime>
#include <QStringList>

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <utility>

namespace dasp::ui {

namespace {

QString qs(const std::string& text) { return QString::fromStdString(text); }

bool sameRun(const RunRow& a, const RunRow& b) {
  return a.id == b.id && a.kind == b.kind && a.name == b.name && a.model == b.model &&
         a.dataset == b.dataset && a.strategy == b.strategy && a.recovery == b.recovery &&
         a.engine == b.engine && a.seed == b.seed && a.status == b.status && a.host == b.host &&
         a.pid == b.pid && a.codeVersion == b.codeVersion && a.startedAt == b.startedAt &&
         a.endedAt == b.endedAt && a.tags == b.tags && a.notes == b.notes &&
         a.error == b.error && a.specJson == b.specJson;
}

// Seconds the run took (or has taken so far); negative when unknown.
double durationSeconds(const RunRow& run) {
  if (run.endedAt) return std::max(0.0, *run.endedAt - run.startedAt);
  if (run.status == RunStatus::Running) return std::max(0.0, wallClockSeconds() - run.startedAt);
  return -1;
}

QString formatDuration(double seconds) {
  if (seconds < 0) return {};
  if (seconds < 60) return QStringLiteral("%1 s").arg(seconds, 0, 'f', 1);
  const auto total = static_cast<qint64>(std::llround(seconds));
  const qint64 h = total / 3600, m = (total % 3600) / 60, s = total % 60;
  if (h == 0) return QStringLiteral("%1m %2s").arg(m).arg(s, 2, 10, QLatin1Char('0'));
  return QStringLiteral("%1h %2m %3s")
      .arg(h)
      .arg(m, 2, 10, QLatin1Char('0'))
      .arg(s, 2, 10, QLatin1Char('0'));
}

QString formatTime(double unixSeconds) {
  const auto ms = static_cast<qint64>(std::llround(unixSeconds * 1000.0));
  return QDateTime::fromMSecsSinceEpoch(ms).toLocalTime().toString(
      QStringLiteral("yyyy-MM-dd HH:mm:ss"));
}

}  // namespace

RunTableModel::RunTableModel(QObject* parent) : QAbstractTableModel(parent) {}

dasp::Status RunTableModel::reload(RunStore& store) {
  Result<std::vector<RunRow>> listed = store.listRuns();
  if (!listed) return listed.status();
  if (m_store != &store) m_strategyLabels.clear();  // another store: its ids are other runs
  m_store = &store;
  std::vector<RunRow> fresh = std::move(listed).value();

  std::unordered_map<std::int64_t, std::size_t> freshIndex;
  freshIndex.reserve(fresh.size());
  for (std::size_t i = 0; i < fresh.size(); ++i) freshIndex.emplace(fresh[i].id, i);

  // 1. Runs gone from the store (deleted, or another store): remove, last row first.
  for (int row = static_cast<int>(m_rows.size()) - 1; row >= 0; --row) {
    if (freshIndex.count(m_rows[static_cast<std::size_t>(row)].id) != 0) continue;
    beginRemoveRows(QModelIndex(), row, row);
    m_strategyLabels.erase(m_rows[static_cast<std::size_t>(row)].id);
    m_rows.erase(m_rows.begin() + row);
    endRemoveRows();
  }

  // 2. Runs already shown: update in place; a running run's duration moves on anyway.
  std::vector<bool> known(fresh.size(), false);
  for (std::size_t row = 0; row < m_rows.size(); ++row) {
    const std::size_t i = freshIndex.at(m_rows[row].id);
    known[i] = true;
    const int r = static_cast<int>(row);
    if (!sameRun(m_rows[row], fresh[i])) {
      m_rows[row] = std::move(fresh[i]);
      Q_EMIT dataChanged(index(r, 0), index(r, ColumnCount - 1));
    } else if (m_rows[row].status == RunStatus::Running) {
      Q_EMIT dataChanged(index(r, Duration), index(r, Duration));
    }
  }

  // 3. New runs: appended in the store's order (the proxy sorts).
  std::vector<RunRow> added;
  for (std::size_t i = 0; i < fresh.size(); ++i) {
    if (!known[i]) added.push_back(std::move(fresh[i]));
  }
  if (!added.empty()) {
    const int first = static_cast<int>(m_rows.size());
    beginInsertRows(QModelIndex(), first, first + static_cast<int>(added.size()) - 1);
    for (RunRow& run : added) m_rows.push_back(std::move(run));
    endInsertRows();
  }
  return Status::ok();
}

void RunTableModel::clear() {
  beginResetModel();
  m_rows.clear();
  m_store = nullptr;
  m_strategyLabels.clear();
  endResetModel();
}

const QString& RunTableModel::strategyLabelOf(const RunRow& run) const {
  auto it = m_strategyLabels.find(run.id);
  if (it != m_strategyLabels.end()) return it->second;
  QString label = qs(run.strategy);
  if (auto spec = parseSpecJson(run.specJson, "run " + std::to_string(run.id)); spec) label = runLabel(spec.value());
  return m_strategyLabels.emplace(run.id, std::move(label)).first->second;
}

std::int64_t RunTableModel::runIdAt(int row) const {
  const RunRow* run = runAt(row);
  return run ? run->id : -1;
}

const RunRow* RunTableModel::runAt(int row) const {
  if (row < 0 || row >= static_cast<int>(m_rows.size())) return nullptr;
  return &m_rows[static_cast<std::size_t>(row)];
}

int RunTableModel::rowOfRun(std::int64_t runId) const {
  for (std::size_t row = 0; row < m_rows.size(); ++row) {
    if (m_rows[row].id == runId) return static_cast<int>(row);
  }
  return -1;
}

int RunTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(m_rows.size());
}

int RunTableModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : ColumnCount;
}

QVariant RunTableModel::displayData(const RunRow& run, int column) const {
  switch (column) {
    case Run: return QVariant::fromValue<qlonglong>(run.id);
    case Started: return formatTime(run.startedAt);
    case Name: return qs(run.name);
    case Kind: return qs(run.kind);
    case Engine: return qs(run.engine);
    case Model: return qs(run.model);
    case Dataset: return qs(run.dataset);
    case Strategy: return strategyLabelOf(run);
    case Seed: return QVariant::fromValue<qlonglong>(run.seed);
    case Status: return QString::fromLatin1(toString(run.status));
    case Duration: return formatDuration(durationSeconds(run));
    case Tags: return qs(run.tags);
    case Notes: return qs(run.notes).replace(QLatin1Char('\n'), QLatin1Char(' '));
    default: return {};
  }
}

QVariant RunTableModel::sortData(const RunRow& run, int column) const {
  switch (column) {
    case Started: return run.startedAt;
    case Duration: return durationSeconds(run);
    default: return displayData(run, column);
  }
}

QVariant RunTableModel::data(const QModelIndex& index, int role) const {
  const RunRow* run = index.isValid() ? runAt(index.row()) : nullptr;
  if (!run) return {};
  const int column = index.column();
  switch (role) {
    case Qt::DisplayRole: return displayData(*run, column);
    case Qt::EditRole:
      if (column == Tags) return qs(run->tags);
      if (column == Notes) return qs(run->notes);
      return displayData(*run, column);
    case SortRole: return sortData(*run, column);
    case Qt::ToolTipRole:
      if (column == Status && run->divergence) return tr("Diverged: %1").arg(qs(run->divergence->describe()));
      if (column == Status && !run->error.empty()) return qs(run->error);
      if (column == Notes && !run->notes.empty()) return qs(run->notes);
      if (column == Started && run->endedAt) {
        return tr("Started %1, ended %2").arg(formatTime(run->startedAt), formatTime(*run->endedAt));
      }
      if (column == Engine) {
        return run->engine == "sim" ? tr("Simulated: one process, virtual time (seconds of the modelled cluster)")
                                    : tr("Real: a server and worker processes, wall-clock time");
      }
      if (column == Run) {
        return tr("Host %1, pid %2, code %3").arg(qs(run->host)).arg(run->pid).arg(qs(run->codeVersion));
      }
      return {};
    case Qt::TextAlignmentRole:
      if (column == Run || column == Seed || column == Duration) {
        return QVariant::fromValue<int>(Qt::AlignRight | Qt::AlignVCenter);
      }
      return {};
    default: return {};
  }
}

QVariant RunTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) {
    return QAbstractTableModel::headerData(section, orientation, role);
  }
  switch (section) {
    case Run: return tr("Run");
    case Started: return tr("Started");
    case Name: return tr("Name");
    case Kind: return tr("Kind");
    case Engine: return tr("Engine");
    case Model: return tr("Model");
    case Dataset: return tr("Dataset");
    case Strategy: return tr("Strategy");
    case Seed: return tr("Seed");
    case Status: return tr("Status");
    case Duration: return tr("Duration");
    case Tags: return tr("Tags");
    case Notes: return tr("Notes");
    default: return {};
  }
}

Qt::ItemFlags RunTableModel::flags(const QModelIndex& index) const {
  Qt::ItemFlags f = QAbstractTableModel::flags(index);
  if (index.isValid() && (index.column() == Tags || index.column() == Notes)) {
    f |= Qt::ItemIsEditable;
  }
  return f;
}

bool RunTableModel::setData(const QModelIndex& index, const QVariant& value, int role) {
  if (role != Qt::EditRole || !index.isValid()) return false;
  const int column = index.column();
  if (column != Tags && column != Notes) return false;
  if (index.row() < 0 || index.row() >= static_cast<int>(m_rows.size())) return false;
  RunRow& run = m_rows[static_cast<std::size_t>(index.row())];
  const std::string text = value.toString().toStdString();
  if ((column == Tags ? run.tags : run.notes) == text) return true;
  if (!m_store) {
    Q_EMIT editFailed(tr("Run %1 was not changed: no run store is open.").arg(run.id));
    return false;
  }
  const dasp::Status written =
      column == Tags ? m_store->setTags(run.id, text) : m_store->setNotes(run.id, text);
  if (!written) {
    Q_EMIT editFailed(tr("Could not save the %1 of run %2: %3")
                          .arg(column == Tags ? tr("tags") : tr("notes"))
                          .arg(run.id)
                          .arg(qs(written.message())));
    return false;
  }
  // Re-read the run so the cell shows what the store kept (it may normalise the text).
  if (Result<RunRow> stored = m_store->run(run.id); stored) {
    run = std::move(stored).value();
  } else {
    (column == Tags ? run.tags : run.notes) = text;
  }
  Q_EMIT dataChanged(this->index(index.row(), 0), this->index(index.row(), ColumnCount - 1));
  return true;
}

}  // namespace dasp::ui
