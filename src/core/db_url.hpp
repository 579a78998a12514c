// Connection URLs: postgresql://, mysql:// and sqlite: forms, parsed once, redacted
// wherever they are shown.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace queuectl {

enum class Backend { sqlite, postgresql, mysql };

// What stands between queuectl and a PostgreSQL server, from the URL's ?pooling=:
// - automatic (no ?pooling=): found at connect; a pooler is noticed when the server
//   process that answers is not the one libpq was told of (see Database::pooled);
// - transaction (?pooling=transaction): a pooler in transaction mode, said by the user:
//   no session state is set or relied on from the first round trip, named locks are lock
//   rows, workers poll;
// - session (?pooling=session): session state is safe (no pooler, or one in session
//   mode): LISTEN and advisory locks are used even where a pooler was noticed.
enum class Pooling { automatic, transaction, session };

std::string_view backend_name(Backend b);

struct DbUrl {
  Backend backend = Backend::sqlite;
  std::string user;
  std::optional<std::string> password;
  std::string host;  // the first host and its port (0: the default)
  int port = 0;
  // Every host and port of a multi-host URL (postgresql://u@h1:5432,h2:5432/db), in order;
  // empty when the URL names one host.
  std::vector<std::pair<std::string, int>> hosts;
  std::string database;  // for SQLite: the file path or ":memory:"
  std::map<std::string, std::string> params;
  std::string original;
  // Where the password came from, for messages about a failed login: "the URL",
  // "QUEUECTL_DB_PASSWORD", "--db-password-file 'F'"; empty when there is none.
  std::string password_origin;
  // The URL is the embedded default ($XDG_DATA_HOME/queuectl/queue.db), not one the user
  // gave: `migrate` may create its folder.
  bool embedded_default = false;

  // Parses a URL; throws UsageError naming what is wrong (never echoing a password).
  static DbUrl parse(std::string_view url);

  // The URL with any password replaced by ***.
  std::string redacted() const;

  // The connection string SOCI's backend expects.
  std::string soci_connect_string() const;

  // An SQLite URL with ?mode=ro: opened read-only.
  bool sqlite_read_only() const;
  // An SQLite URL with ?mode=rw: the file is never created, not even by `migrate`.
  bool sqlite_no_create() const;

  // ?pooling= (PostgreSQL only; never given to libpq).
  Pooling pooling() const;

  // A copy that gives up connecting after about `seconds` (PostgreSQL's libpq waits at
  // least 2 s per host; on MySQL each read waits as long), whatever the URL says: for
  // `__complete`, which must never keep a shell waiting.
  DbUrl with_connect_timeout(int seconds) const;
};

// Where the URL comes from: --db, else $QUEUECTL_DB, else the embedded SQLite default.
// The password, when given, comes from `password_file`, else $QUEUECTL_DB_PASSWORD (when
// not empty), else the URL. The file's first line is the password (a trailing CR is
// dropped); a file that cannot be read, a folder, or an empty first line is a UsageError
// naming the file.
struct UrlSources {
  std::string flag;
  std::string password_file;
};
DbUrl resolve_db_url(const UrlSources& sources);

// Every connection keyword of the libpq queuectl runs with (PQconndefaults), which
// postgresql:// URLs accept as query parameters (src/db/dialects/pg_keywords.cpp).
std::set<std::string> libpq_keywords();

// $XDG_DATA_HOME/queuectl/queue.db, or ~/.local/share/queuectl/queue.db.
std::string default_sqlite_path();

}  // namespace queuectl
