#include "worker/announcements.hpp"

#include <algorithm>

namespace queuectl {

bool Announcements::available(const DbUrl& url) {
  return make_dialect(url.backend)->listen_notify();
}

Announcements::Announcements(Database& db) : db_(db) {
  db_.session() << db_.sql().listen;
}

int Announcements::fd() const {
  return db_.dialect().notification_socket(db_.session());
}

bool Announcements::take(const std::string& queue) {
  const auto queues = db_.dialect().take_notifications(db_.session());
  return std::find(queues.begin(), queues.end(), queue) != queues.end();
}

}  // namespace queuectl
