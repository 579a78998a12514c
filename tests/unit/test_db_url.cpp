#include <doctest/doctest.h>

#include <unistd.h>
#include <cstdio>
#include <fstream>
#include <string>

#include "core/db_url.hpp"
#include "unit_helpers.hpp"

using queuectl::Backend;
using queuectl::DbUrl;
using queuectl::test::contains;
using queuectl::test::ScopedEnv;
using queuectl::test::usage_error_of;

namespace {

// A temporary file holding `content`, removed at the end of the test.
class TempFile {
 public:
  explicit TempFile(const std::string& content) {
    char name[] = "/tmp/queuectl-unit-XXXXXX";
    int fd = ::mkstemp(name);
    REQUIRE(fd >= 0);
    ::close(fd);
    path_ = name;
    std::ofstream(path_, std::ios::binary) << content;
  }
  ~TempFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace

TEST_CASE("core::DbUrl::parse") {
  SUBCASE("postgresql:// with every part") {
    DbUrl u = DbUrl::parse("postgresql://app:s3cret@db.example.com:5433/jobs?sslmode=prefer");
    CHECK(u.backend == Backend::postgresql);
    CHECK(u.user == "app");
    REQUIRE(u.password.has_value());
    CHECK(*u.password == "s3cret");
    CHECK(u.host == "db.example.com");
    CHECK(u.port == 5433);
    CHECK(u.database == "jobs");
    CHECK(u.params.size() == 1);
    CHECK(u.params.at("sslmode") == "prefer");
  }
  SUBCASE("postgres:// is the same backend; port and user are optional") {
    DbUrl u = DbUrl::parse("postgres://db/jobs");
    CHECK(u.backend == Backend::postgresql);
    CHECK(u.user.empty());
    CHECK_FALSE(u.password.has_value());
    CHECK(u.host == "db");
    CHECK(u.port == 0);
    CHECK(u.database == "jobs");
    CHECK(u.params.empty());
  }
  SUBCASE("a user without a password") {
    DbUrl u = DbUrl::parse("postgresql://app@db/jobs");
    CHECK(u.user == "app");
    CHECK_FALSE(u.password.has_value());
  }
  SUBCASE("an empty password is a password") {
    DbUrl u = DbUrl::parse("postgresql://app:@db/jobs");
    CHECK(u.user == "app");
    REQUIRE(u.password.has_value());
    CHECK(u.password->empty());
  }
  SUBCASE("mysql:// and mariadb://") {
    DbUrl m = DbUrl::parse("mysql://root:pw@127.0.0.1:3306/queue");
    CHECK(m.backend == Backend::mysql);
    CHECK(m.user == "root");
    CHECK(m.password.value_or("") == "pw");
    CHECK(m.host == "127.0.0.1");
    CHECK(m.port == 3306);
    CHECK(m.database == "queue");
    DbUrl ma = DbUrl::parse("mariadb://app@maria/queue");
    CHECK(ma.backend == Backend::mysql);
    CHECK(ma.host == "maria");
    CHECK(ma.database == "queue");
  }
  SUBCASE("percent-escapes in user, password and database") {
    DbUrl u = DbUrl::parse("postgresql://us%40er:p%40ss%3Aw%2Fd%25@db/my%2Djobs");
    CHECK(u.user == "us@er");
    CHECK(u.password.value_or("") == "p@ss:w/d%");
    CHECK(u.database == "my-jobs");
  }
  SUBCASE("a raw '@' in the password: the last '@' ends the user info") {
    DbUrl u = DbUrl::parse("postgresql://app:p@ss@db/jobs");
    CHECK(u.password.value_or("") == "p@ss");
    CHECK(u.host == "db");
  }
  SUBCASE("PostgreSQL Unix socket: ?host=/socket/dir and no host") {
    DbUrl u = DbUrl::parse("postgresql://app@/jobs?host=/var/run/postgresql");
    CHECK(u.backend == Backend::postgresql);
    CHECK(u.host.empty());
    CHECK(u.database == "jobs");
    CHECK(u.params.at("host") == "/var/run/postgresql");
  }
  SUBCASE("MySQL Unix socket: ?socket=/path and no host") {
    DbUrl u = DbUrl::parse("mysql://app:pw@/queue?socket=/run/mysqld/mysqld.sock");
    CHECK(u.backend == Backend::mysql);
    CHECK(u.host.empty());
    CHECK(u.params.at("socket") == "/run/mysqld/mysqld.sock");
  }
  SUBCASE("several query parameters, percent-decoded") {
    DbUrl u = DbUrl::parse("postgresql://db/jobs?sslmode=require&application_name=my%20app&");
    CHECK(u.params.size() == 2);
    CHECK(u.params.at("sslmode") == "require");
    CHECK(u.params.at("application_name") == "my app");
  }
  SUBCASE("IPv6 host in brackets") {
    DbUrl u = DbUrl::parse("postgresql://app:pw@[::1]:5432/jobs");
    CHECK(u.host == "::1");
    CHECK(u.port == 5432);
    CHECK(u.database == "jobs");
    DbUrl no_port = DbUrl::parse("postgresql://[fe80::1]/jobs");
    CHECK(no_port.host == "fe80::1");
    CHECK(no_port.port == 0);
  }
  SUBCASE("port bounds") {
    CHECK(DbUrl::parse("postgresql://db:1/jobs").port == 1);
    CHECK(DbUrl::parse("postgresql://db:65535/jobs").port == 65535);
  }
  SUBCASE("sqlite: forms") {
    DbUrl rel = DbUrl::parse("sqlite:relative/path.db");
    CHECK(rel.backend == Backend::sqlite);
    CHECK(rel.database == "relative/path.db");
    DbUrl abs = DbUrl::parse("sqlite:///absolute/path.db");
    CHECK(abs.backend == Backend::sqlite);
    CHECK(abs.database == "/absolute/path.db");
    DbUrl mem = DbUrl::parse("sqlite::memory:");
    CHECK(mem.backend == Backend::sqlite);
    CHECK(mem.database == ":memory:");
  }
  SUBCASE("original keeps the text") {
    CHECK(DbUrl::parse("sqlite::memory:").original == "sqlite::memory:");
  }
}

TEST_CASE("core::DbUrl::parse rejections") {
  auto rejects = [](const std::string& url, const std::string& why) {
    CAPTURE(url);
    std::string message = usage_error_of([&] { DbUrl::parse(url); });
    CHECK(contains(message, "database URL"));
    CHECK(contains(message, why));
  };
  SUBCASE("unknown scheme") {
    rejects("oracle://db/jobs", "scheme");
    rejects("http://db/jobs", "scheme");
    rejects("postgresql:/db/jobs", "scheme");
    rejects("db/jobs", "scheme");
    rejects("", "scheme");
  }
  SUBCASE("missing host") {
    rejects("postgresql:///jobs", "host");
    rejects("mysql://app:pw@/jobs", "host");
    rejects("mysql://app@/queue?host=/var/run/mysqld", "host");    // host= is PostgreSQL's
    rejects("postgresql://app@/jobs?socket=/tmp/x.sock", "host");  // socket= is MySQL's
  }
  SUBCASE("missing database") {
    rejects("postgresql://db", "database");
    rejects("postgresql://db/", "database");
    rejects("mysql://app:pw@db:3306", "database");
    rejects("postgresql://db/jobs/extra", "database");
  }
  SUBCASE("bad port") {
    rejects("postgresql://db:abc/jobs", "port");
    rejects("postgresql://db:/jobs", "port");
    rejects("postgresql://db:70000/jobs", "port");
    rejects("postgresql://db:0/jobs", "port");
    rejects("postgresql://db:123456/jobs", "port");
    rejects("postgresql://db:-1/jobs", "port");
  }
  SUBCASE("bad percent-escape") {
    rejects("postgresql://app:p%zz@db/jobs", "percent");
    rejects("postgresql://app:p%4@db/jobs", "percent");
    rejects("postgresql://db/jo%", "percent");
  }
  SUBCASE("malformed host and query") {
    rejects("postgresql://[::1/jobs", "[");
    rejects("postgresql://[::1]x/jobs", "host");
    rejects("postgresql://db/jobs?sslmode", "sslmode");
    rejects("postgresql://db/jobs?=require", "no name before its '='");
  }
  SUBCASE("a query parameter given twice (the last would win unseen)") {
    rejects("postgresql://db/jobs?sslmode=require&sslmode=disable",
            "query parameter 'sslmode' is given twice");
    rejects("mysql://app@db/jobs?ssl-mode=REQUIRED&ssl%2Dmode=DISABLED",
            "'ssl-mode' is given twice");
    rejects("sqlite:q.db?mode=ro&mode=rw", "'mode' is given twice");
  }
  SUBCASE("sqlite: without a path") {
    rejects("sqlite:", "sqlite");
    rejects("sqlite://", "sqlite");
  }
}

TEST_CASE("core::DbUrl passwords never appear in messages") {
  SUBCASE("parse errors after the password") {
    for (const char* url : {
             "postgresql://app:s3cret@db:5x/jobs",
             "postgresql://app:s3cret@db:70000/jobs",
             "postgresql://app:s3cret@db",
             "postgresql://app:s3cret@/jobs",
             "postgresql://app:s3cret@db/jo%zz",
             "postgresql://app:s3cret@db/jobs/x",
             "postgresql://app:s3cret@[::1]x/jobs",
             "postgresql://app:s3cret@db/jobs?sslmode",
             "postgresql://app@db/jobs?password=s3cret&password=s3cret2",
             "mysql://app:s3cret@db:99999/queue",
             "mariadb://app:s3cret@db:3306",
             "postgresql://app:s3cr%zzet@db/jobs",
         }) {
      CAPTURE(url);
      std::string message = usage_error_of([&] { DbUrl::parse(url); });
      CHECK_FALSE(contains(message, "s3cret"));
      CHECK_FALSE(contains(message, "s3cr"));
    }
  }
}

TEST_CASE("core::DbUrl::redacted") {
  SUBCASE("the password becomes ***") {
    DbUrl u = DbUrl::parse("postgresql://app:s3cret@db/jobs");
    CHECK(u.redacted() == "postgresql://app:***@db/jobs");
  }
  SUBCASE("port, scheme spelling and parameters are kept") {
    DbUrl u = DbUrl::parse("postgres://app:s3cret@db:5433/jobs?sslmode=prefer");
    std::string r = u.redacted();
    CHECK(r == "postgres://app:***@db:5433/jobs?sslmode=prefer");
    CHECK_FALSE(contains(r, "s3cret"));
  }
  SUBCASE("mysql and mariadb") {
    CHECK(DbUrl::parse("mysql://root:s3cret@127.0.0.1:3306/queue").redacted() ==
          "mysql://root:***@127.0.0.1:3306/queue");
    CHECK(DbUrl::parse("mariadb://root:s3cret@m/queue").redacted() == "mariadb://root:***@m/queue");
  }
  SUBCASE("percent-encoded password: neither form leaks") {
    std::string r = DbUrl::parse("postgresql://app:s3%63ret%21@db/jobs").redacted();
    CHECK(contains(r, "***"));
    CHECK_FALSE(contains(r, "s3cret"));
    CHECK_FALSE(contains(r, "s3%63ret"));
  }
  SUBCASE("a password given as a query parameter is masked too") {
    std::string r =
        DbUrl::parse("postgresql://app@db/jobs?password=s3cret&sslmode=require").redacted();
    CHECK_FALSE(contains(r, "s3cret"));
    CHECK(contains(r, "password=***"));
    CHECK(contains(r, "sslmode=require"));
  }
  SUBCASE("no password, no ***") {
    std::string r = DbUrl::parse("postgresql://app@db/jobs").redacted();
    CHECK(r == "postgresql://app@db/jobs");
  }
  SUBCASE("IPv6 hosts keep their brackets") {
    std::string r = DbUrl::parse("postgresql://app:s3cret@[::1]:5432/jobs").redacted();
    CHECK(r == "postgresql://app:***@[::1]:5432/jobs");
  }
  SUBCASE("a password set after parsing is redacted") {
    DbUrl u = DbUrl::parse("postgresql://app@db/jobs");
    u.password = "s3cret";
    CHECK_FALSE(contains(u.redacted(), "s3cret"));
    CHECK(contains(u.redacted(), "***"));
  }
  SUBCASE("sqlite URLs are shown as given") {
    CHECK(DbUrl::parse("sqlite:///var/lib/q.db").redacted() == "sqlite:///var/lib/q.db");
    CHECK(DbUrl::parse("sqlite::memory:").redacted() == "sqlite::memory:");
  }
}

TEST_CASE("core::DbUrl::soci_connect_string") {
  SUBCASE("postgresql") {
    std::string s =
        DbUrl::parse("postgresql://app:s3cret@db:5433/jobs?sslmode=prefer").soci_connect_string();
    CHECK(contains(s, "host='db'"));
    CHECK(contains(s, "port='5433'"));
    CHECK(contains(s, "dbname='jobs'"));
    CHECK(contains(s, "user='app'"));
    CHECK(contains(s, "password='s3cret'"));
    CHECK(contains(s, "sslmode='prefer'"));
    CHECK(contains(s, "connect_timeout='10'"));
    CHECK(contains(s, "application_name='queuectl'"));
  }
  SUBCASE("postgresql: user parameters win over the defaults") {
    std::string s = DbUrl::parse("postgresql://db/jobs?connect_timeout=3&application_name=cron")
                        .soci_connect_string();
    CHECK(contains(s, "connect_timeout='3'"));
    CHECK_FALSE(contains(s, "connect_timeout='10'"));
    CHECK(contains(s, "application_name='cron'"));
    CHECK_FALSE(contains(s, "application_name='queuectl'"));
    CHECK_FALSE(contains(s, "port="));
    CHECK_FALSE(contains(s, "user="));
    CHECK_FALSE(contains(s, "password="));
  }
  SUBCASE("postgresql: Unix socket directory becomes host") {
    std::string s =
        DbUrl::parse("postgresql://app@/jobs?host=/var/run/postgresql").soci_connect_string();
    CHECK(contains(s, "host='/var/run/postgresql'"));
    CHECK(contains(s, "dbname='jobs'"));
  }
  SUBCASE("quotes and backslashes are escaped") {
    std::string s = DbUrl::parse("postgresql://app:it%27s%5C@db/jobs").soci_connect_string();
    CHECK(contains(s, R"(password='it\'s\\')"));
  }
  SUBCASE("mysql") {
    std::string s = DbUrl::parse("mysql://root:pw@127.0.0.1:3306/queue").soci_connect_string();
    CHECK(contains(s, "host='127.0.0.1'"));
    CHECK(contains(s, "port='3306'"));
    CHECK(contains(s, "db='queue'"));
    CHECK(contains(s, "user='root'"));
    CHECK(contains(s, "password='pw'"));
    CHECK(contains(s, "connect_timeout='10'"));
    CHECK_FALSE(contains(s, "dbname="));
    CHECK_FALSE(contains(s, "application_name"));
  }
  SUBCASE("mysql: socket= becomes unix_socket=") {
    std::string s =
        DbUrl::parse("mysql://app@/queue?socket=/run/mysqld/mysqld.sock").soci_connect_string();
    CHECK(contains(s, "unix_socket='/run/mysqld/mysqld.sock'"));
    CHECK_FALSE(contains(s, " socket="));
    CHECK(s.rfind("socket=", 0) == std::string::npos);
    CHECK_FALSE(contains(s, "host="));
  }
  SUBCASE("sqlite") {
    std::string s = DbUrl::parse("sqlite:///var/lib/queuectl/q.db").soci_connect_string();
    // Quoted, so that a path with spaces stays one value for SOCI.
    CHECK(s.rfind("db=\"/var/lib/queuectl/q.db\"", 0) == 0);
    CHECK(contains(s, "timeout="));
    CHECK(DbUrl::parse("sqlite::memory:").soci_connect_string().rfind("db=\":memory:\"", 0) == 0);
    CHECK(DbUrl::parse("sqlite:/tmp/sp ace/q.db")
              .soci_connect_string()
              .rfind("db=\"/tmp/sp ace/q.db\"", 0) == 0);
  }
}

TEST_CASE("core::backend_name") {
  CHECK(queuectl::backend_name(Backend::sqlite) == "sqlite");
  CHECK(queuectl::backend_name(Backend::postgresql) == "postgresql");
  CHECK(queuectl::backend_name(Backend::mysql) == "mysql");
}

TEST_CASE("core::resolve_db_url") {
  ScopedEnv no_password("QUEUECTL_DB_PASSWORD", std::nullopt);
  ScopedEnv xdg("XDG_DATA_HOME", std::string("/tmp/queuectl-unit-xdg"));

  SUBCASE("--db beats QUEUECTL_DB") {
    ScopedEnv env("QUEUECTL_DB", std::string("mysql://root@envhost/queue"));
    DbUrl u = queuectl::resolve_db_url({"postgresql://flaghost/jobs", ""});
    CHECK(u.backend == Backend::postgresql);
    CHECK(u.host == "flaghost");
  }
  SUBCASE("QUEUECTL_DB beats the default") {
    ScopedEnv env("QUEUECTL_DB", std::string("mysql://root@envhost/queue"));
    DbUrl u = queuectl::resolve_db_url({});
    CHECK(u.backend == Backend::mysql);
    CHECK(u.host == "envhost");
  }
  SUBCASE("a bad QUEUECTL_DB is a usage error") {
    ScopedEnv env("QUEUECTL_DB", std::string("nope://x"));
    usage_error_of([] { queuectl::resolve_db_url({}); });
  }
  SUBCASE("default: $XDG_DATA_HOME/queuectl/queue.db") {
    ScopedEnv env("QUEUECTL_DB", std::nullopt);
    DbUrl u = queuectl::resolve_db_url({});
    CHECK(u.backend == Backend::sqlite);
    CHECK(u.database == "/tmp/queuectl-unit-xdg/queuectl/queue.db");
    CHECK(queuectl::default_sqlite_path() == "/tmp/queuectl-unit-xdg/queuectl/queue.db");
  }
  SUBCASE("an empty QUEUECTL_DB falls back to the default") {
    ScopedEnv env("QUEUECTL_DB", std::string(""));
    DbUrl u = queuectl::resolve_db_url({});
    CHECK(u.backend == Backend::sqlite);
    CHECK(u.database == "/tmp/queuectl-unit-xdg/queuectl/queue.db");
  }
  SUBCASE("default without XDG_DATA_HOME: ~/.local/share/queuectl/queue.db") {
    ScopedEnv env("QUEUECTL_DB", std::nullopt);
    ScopedEnv no_xdg("XDG_DATA_HOME", std::nullopt);
    ScopedEnv home("HOME", std::string("/home/unit-tester"));
    DbUrl u = queuectl::resolve_db_url({});
    CHECK(u.backend == Backend::sqlite);
    CHECK(u.database == "/home/unit-tester/.local/share/queuectl/queue.db");
    ScopedEnv empty_xdg("XDG_DATA_HOME", std::string(""));
    CHECK(queuectl::default_sqlite_path() == "/home/unit-tester/.local/share/queuectl/queue.db");
  }
  SUBCASE("neither XDG_DATA_HOME nor HOME: an error asking for --db") {
    ScopedEnv env("QUEUECTL_DB", std::nullopt);
    ScopedEnv no_xdg("XDG_DATA_HOME", std::nullopt);
    ScopedEnv no_home("HOME", std::nullopt);
    CHECK_THROWS_AS(queuectl::default_sqlite_path(), queuectl::Error);
    CHECK_THROWS_WITH(queuectl::resolve_db_url({}), doctest::Contains("--db"));
    CHECK_NOTHROW(queuectl::resolve_db_url({"sqlite::memory:", ""}));
  }
  SUBCASE("QUEUECTL_DB_PASSWORD overrides the URL's password") {
    ScopedEnv pw("QUEUECTL_DB_PASSWORD", std::string("envpw"));
    DbUrl u = queuectl::resolve_db_url({"postgresql://app:urlpw@db/jobs", ""});
    CHECK(u.password.value_or("") == "envpw");
    CHECK_FALSE(contains(u.redacted(), "envpw"));
    CHECK(contains(u.soci_connect_string(), "password='envpw'"));
  }
  SUBCASE("QUEUECTL_DB_PASSWORD supplies a password the URL lacks") {
    ScopedEnv pw("QUEUECTL_DB_PASSWORD", std::string("envpw"));
    DbUrl u = queuectl::resolve_db_url({"postgresql://app@db/jobs", ""});
    CHECK(u.password.value_or("") == "envpw");
  }
  SUBCASE("an empty QUEUECTL_DB_PASSWORD is ignored") {
    ScopedEnv pw("QUEUECTL_DB_PASSWORD", std::string(""));
    DbUrl u = queuectl::resolve_db_url({"postgresql://app:urlpw@db/jobs", ""});
    CHECK(u.password.value_or("") == "urlpw");
  }
  SUBCASE("a password file beats QUEUECTL_DB_PASSWORD and the URL") {
    ScopedEnv pw("QUEUECTL_DB_PASSWORD", std::string("envpw"));
    TempFile file("filepw\nsecond line\n");
    DbUrl u = queuectl::resolve_db_url({"postgresql://app:urlpw@db/jobs", file.path()});
    CHECK(u.password.value_or("") == "filepw");
    CHECK_FALSE(contains(u.redacted(), "filepw"));
  }
  SUBCASE("a password file with CRLF or without a newline") {
    TempFile crlf("filepw\r\n");
    CHECK(queuectl::resolve_db_url({"mysql://app@db/queue", crlf.path()}).password.value_or("") ==
          "filepw");
    TempFile bare("bare pw");
    CHECK(queuectl::resolve_db_url({"mysql://app@db/queue", bare.path()}).password.value_or("") ==
          "bare pw");
  }
  SUBCASE("an unreadable password file is a usage error naming it") {
    std::string missing = "/tmp/queuectl-unit-no-such-dir/password";
    std::string message = usage_error_of([&] {
      queuectl::resolve_db_url({"postgresql://db/jobs", missing});
    });
    CHECK(contains(message, missing));
  }
}
