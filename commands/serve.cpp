// queuectl serve: the queues in a browser, and their JSON API, from this binary.
#include <algorithm>
#include <memory>

#include "cli/commands.hpp"
#include "cli/input.hpp"
#include "core/duration.hpp"
#include "core/errors.hpp"
#include "serve/server.hpp"

namespace queuectl {

void setup_serve(CLI::App& app, Context& ctx) {
  struct Options {
    std::string listen = "127.0.0.1:8080";
    std::string refresh = "2s";
    std::string request_timeout = "30s";
    bool hash_password = false;
    ServeOptions serve;
  };
  auto o = std::make_shared<Options>();
  auto* sub = app.add_subcommand("serve", "A web view of the queues, and its JSON API");
  sub->add_option("--listen", o->listen,
                  "HOST:PORT to listen on (default 127.0.0.1:8080; port 0: any)")
      ->type_name("HOST:PORT");
  sub->add_flag("--allow-writes", o->serve.allow_writes,
                "Let the page retry, cancel, move, pause, resume and purge");
  sub->add_flag("--read-only", o->serve.read_only, "Refuse every write (the default)");
  sub->add_option("--auth-file", o->serve.auth_file,
                  "Users (USER:HASH) and bearer tokens (token:HASH) who may sign in")
      ->type_name("FILE");
  sub->add_option("--tls-cert", o->serve.http.tls_cert, "Serve HTTPS with this PEM certificate")
      ->type_name("FILE");
  sub->add_option("--tls-key", o->serve.http.tls_key, "... and this PEM private key")
      ->type_name("FILE");
  sub->add_option("--threads", o->serve.http.threads,
                  "Requests served at once, each with its own connection (default 8)")
      ->check(CLI::Range(1, 64));
  sub->add_option("--refresh", o->refresh, "How often the page refreshes, 200ms to 1h (default 2s)")
      ->type_name("DUR");
  sub->add_option("--request-timeout", o->request_timeout,
                  "Close a connection slower than this to send a request or read an answer "
                  "(default 30s)")
      ->type_name("DUR");
  sub->add_flag("--hash-password", o->hash_password,
                "Read a password on stdin, print its bcrypt hash for --auth-file, exit");
  sub->footer(
      "The page shows each queue's counts, throughput and oldest ready job, the jobs with\n"
      "filters, a job's payload, result and error, the workers and their leases, failures\n"
      "grouped by error, groups and schedules. It refreshes itself every --refresh.\n"
      "The JSON API under /api/ answers what the commands print with -o json: /api/stats\n"
      "is `stats`, /api/jobs?queue=Q&status=S is `list`, /api/jobs/ID is `show`, /api/leases,\n"
      "/api/groups?queue=Q, /api/top (`top --once`), /api/schedules (`cron list`).\n"
      "Writes (POST /api/retry, cancel, move, pause, resume, purge) are off unless\n"
      "--allow-writes; each needs the X-CSRF-Token of /api/session and is logged on stderr.\n"
      "Safe by default: loopback only; any other address needs --auth-file, whose lines are\n"
      "USER:HASH (HASH from --hash-password or `htpasswd -B`) or token:HASH (a bearer\n"
      "token). Put TLS in front (--tls-cert/--tls-key, or a reverse proxy) when the network\n"
      "is not yours. On a PostgreSQL standby the server is read-only whatever is asked.\n"
      "A client silent for 5 s, or slower than --request-timeout to send a whole request\n"
      "(however steadily it trickles), is disconnected; a handler's own time is not counted.\n"
      "Examples:\n"
      "  queuectl serve                           (then open http://127.0.0.1:8080/)\n"
      "  queuectl serve --listen 127.0.0.1:0 --allow-writes\n"
      "  queuectl serve --hash-password < pw.txt | sed 's/^/alice:/' > users\n"
      "  queuectl serve --listen 0.0.0.0:8443 --auth-file users --tls-cert c.pem --tls-key k.pem\n"
      "  curl -s http://127.0.0.1:8080/api/stats | jq .");
  sub->callback([&ctx, o] {
    if (o->hash_password) {
      std::string password = read_input("-");
      while (!password.empty() && (password.back() == '\n' || password.back() == '\r'))
        password.pop_back();
      if (password.empty()) throw UsageError("--hash-password: no password on stdin");
      const std::string hash = http_module().hash_password(password);
      if (hash.empty()) throw Error("libcrypt could not make a bcrypt hash");
      ctx.print_text(hash + "\n");
      return;
    }
    parse_listen(o->listen, o->serve.http);
    const Duration refresh = Duration::parse(o->refresh, "--refresh");
    // The page takes the same range (web/app.js, loadSession).
    if (refresh.ms() < 200 || refresh.ms() > 3600000)
      throw UsageError("--refresh " + o->refresh + " is not between 200ms and 1h");
    o->serve.refresh_ms = static_cast<int>(refresh.ms());
    const Duration request = Duration::parse(o->request_timeout, "--request-timeout");
    if (request.ms() < 1000 || request.ms() > 3600000)
      throw UsageError("--request-timeout " + o->request_timeout + " is not between 1s and 1h");
    o->serve.http.request_timeout_ms = static_cast<int>(request.ms());
    run_serve(ctx, o->serve);
  });
}

}  // namespace queuectl
