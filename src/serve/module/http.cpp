// queuectl-http.so: the HTTP server of `queuectl serve` (Debian's cpp-httplib) and the
// crypt(3) password checks (libcrypt), behind src/serve/http_module.hpp. Nothing here knows
// about jobs: requests go to the handler `serve` was given, answers come back as they are.
#include <arpa/inet.h>
#include <crypt.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include <httplib.h>

#include "serve/http_module.hpp"

namespace queuectl {
namespace {

// The server serve() runs, for stop() from another thread; the mutex keeps stop() from
// reaching a server that serve() is destroying.
std::mutex g_mutex;
httplib::Server* g_server = nullptr;
bool g_stop_requested = false;

// Publishes `server` (nullptr: none); false when a stop came first.
bool publish(httplib::Server* server) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_server = server;
  return !g_stop_requested;
}

// Closes connections that take too long to send a request (or to read an answer and send
// the next one). cpp-httplib's timeouts are per read: a client that sends a byte every few
// seconds keeps one of the --threads busy for as long as it likes, and a few such clients
// take them all. Every `interval`, this looks at the process's sockets (/proc/self/fd) that
// are connections to the server's port, and shuts down those older than the limit, unless a
// handler is answering them: a handler's time does not count, and the clock starts again
// when it returns. shutdown(2) leaves the descriptor to its thread, which sees the
// connection end and closes it.
class ConnectionReaper {
 public:
  ConnectionReaper(int port, std::chrono::milliseconds limit)
      : port_(port), limit_(limit), thread_([this] { run(); }) {}
  ~ConnectionReaper() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  ConnectionReaper(const ConnectionReaper&) = delete;
  ConnectionReaper& operator=(const ConnectionReaper&) = delete;

  // A handler starts (true) or ends (false) answering the connection from `peer`.
  void answering(const std::string& peer, bool busy) {
    std::lock_guard<std::mutex> lock(mutex_);
    Connection& c = connections_[peer];
    c.busy = busy;
    c.since = std::chrono::steady_clock::now();
  }

 private:
  struct Connection {
    ino_t inode = 0;
    std::chrono::steady_clock::time_point since;
    bool busy = false;
    bool seen = false;
  };

  // "address:port" of the peer of `fd` when it is a connection accepted on our port.
  bool accepted_peer(int fd, std::string& peer) const {
    sockaddr_storage local{}, remote{};
    socklen_t len = sizeof local;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) != 0) return false;
    int listening = 0;
    socklen_t optlen = sizeof listening;
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &optlen) != 0 || listening)
      return false;
    char text[INET6_ADDRSTRLEN] = {};
    int local_port = 0, remote_port = 0;
    len = sizeof remote;
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&remote), &len) != 0) return false;
    if (local.ss_family == AF_INET) {
      local_port = ntohs(reinterpret_cast<sockaddr_in&>(local).sin_port);
      const auto& r = reinterpret_cast<sockaddr_in&>(remote);
      inet_ntop(AF_INET, &r.sin_addr, text, sizeof text);
      remote_port = ntohs(r.sin_port);
    } else if (local.ss_family == AF_INET6) {
      local_port = ntohs(reinterpret_cast<sockaddr_in6&>(local).sin6_port);
      const auto& r = reinterpret_cast<sockaddr_in6&>(remote);
      inet_ntop(AF_INET6, &r.sin6_addr, text, sizeof text);
      remote_port = ntohs(r.sin6_port);
    } else {
      return false;
    }
    if (local_port != port_) return false;
    peer = std::string(text) + ":" + std::to_string(remote_port);
    return true;
  }

  void scan() {
    DIR* dir = opendir("/proc/self/fd");
    if (!dir) return;
    const auto now = std::chrono::steady_clock::now();
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& entry : connections_) entry.second.seen = false;
    while (dirent* e = readdir(dir)) {
      char* end = nullptr;
      const long fd = std::strtol(e->d_name, &end, 10);
      if (*end != '\0' || fd == dirfd(dir)) continue;
      struct stat st {};
      if (fstat(static_cast<int>(fd), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
      std::string peer;
      if (!accepted_peer(static_cast<int>(fd), peer)) continue;
      Connection& c = connections_[peer];
      if (c.inode != st.st_ino) {  // new to us, or a new connection from the same port
        if (!c.busy) c.since = now;
        c.inode = st.st_ino;
      }
      c.seen = true;
      if (c.busy || now - c.since < limit_) continue;
      // The descriptor may have been closed and reused since fstat: only the same socket.
      struct stat again {};
      if (fstat(static_cast<int>(fd), &again) == 0 && again.st_ino == st.st_ino)
        shutdown(static_cast<int>(fd), SHUT_RDWR);
    }
    closedir(dir);
    for (auto it = connections_.begin(); it != connections_.end();)
      it = it->second.seen || it->second.busy ? std::next(it) : connections_.erase(it);
  }

  void run() {
    const auto interval = std::max(std::chrono::milliseconds(100),
                                   std::min(std::chrono::milliseconds(1000), limit_ / 4));
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stopping_) {
      wake_.wait_for(lock, interval, [this] { return stopping_; });
      if (stopping_) break;
      lock.unlock();
      scan();
      lock.lock();
    }
  }

  const int port_;
  const std::chrono::milliseconds limit_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::map<std::string, Connection> connections_;
  std::thread thread_;  // last: started once everything above exists
};

HttpRequest to_request(const httplib::Request& req) {
  HttpRequest out;
  out.method = req.method;
  out.path = req.path;
  for (const auto& [k, v] : req.params) out.query.emplace_back(k, v);
  for (const auto& [k, v] : req.headers) out.headers.emplace_back(k, v);
  out.body = req.body;
  out.remote_addr = req.remote_addr;
  return out;
}

void fill(httplib::Response& res, const HttpResponse& out) {
  res.status = out.status;
  for (const auto& [k, v] : out.headers) res.set_header(k, v);
  res.set_content(out.body, out.content_type.c_str());
}

std::string serve(const HttpServerConfig& config, const HttpHandler& handler,
                  const std::function<void(int port)>& listening) {
  std::unique_ptr<httplib::Server> server;
  if (!config.tls_cert.empty()) {
    auto tls =
        std::make_unique<httplib::SSLServer>(config.tls_cert.c_str(), config.tls_key.c_str());
    if (!tls->is_valid())
      return "cannot use --tls-cert " + config.tls_cert + " with --tls-key " + config.tls_key +
             ": not a readable PEM certificate and its private key";
    server = std::move(tls);
  } else {
    server = std::make_unique<httplib::Server>();
  }
  // httplib's default sets SO_REUSEPORT, with which a second server on a port in use binds
  // too and the kernel shares the connections between the two. SO_REUSEADDR alone still lets
  // a restart take the port while the last run's connections are in TIME_WAIT.
  server->set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  const int threads = config.threads;
  server->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  server->set_payload_max_length(config.max_body);
  server->set_read_timeout(config.timeout_seconds, 0);
  server->set_write_timeout(config.timeout_seconds, 0);
  // A kept-alive connection holds a thread while it idles: give it back soon.
  server->set_keep_alive_timeout(1);
  server->set_keep_alive_max_count(100);
  const std::size_t max_headers = config.max_headers;
  server->set_pre_routing_handler(
      [max_headers](const httplib::Request& req, httplib::Response& res) {
        if (req.headers.size() <= max_headers) return httplib::Server::HandlerResponse::Unhandled;
        res.status = 431;
        res.set_content(
            "{\"error\": \"too many header lines (at most " + std::to_string(max_headers) + ")\"}",
            "application/json");
        return httplib::Server::HandlerResponse::Handled;
      });
  std::unique_ptr<ConnectionReaper> reaper;  // once the port is known
  auto route = [&handler, &reaper](const httplib::Request& req, httplib::Response& res) {
    const std::string peer = req.remote_addr + ":" + std::to_string(req.remote_port);
    reaper->answering(peer, true);
    struct Done {
      ConnectionReaper& reaper;
      const std::string& peer;
      ~Done() { reaper.answering(peer, false); }
    } done{*reaper, peer};
    HttpResponse out;
    handler(to_request(req), out);
    fill(res, out);
  };
  server->Get(".*", route);
  server->Post(".*", route);
  server->Put(".*", route);
  server->Delete(".*", route);
  server->Patch(".*", route);
  server->Options(".*", route);
  // httplib's own answers (413, 400 for a malformed request) get a JSON body as well.
  server->set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (!res.body.empty()) return;
    const std::string reason = res.status == 413 ? "request body too large" : "bad request";
    res.set_content("{\"error\": \"" + reason + "\"}", "application/json");
  });
  if (!publish(server.get())) return "";
  struct Unpublish {
    ~Unpublish() { publish(nullptr); }
  } unpublish;
  int port = config.port;
  if (port == 0) {
    port = server->bind_to_any_port(config.host);
    if (port < 0) return "cannot listen on " + config.host + ": " + std::strerror(errno);
  } else if (!server->bind_to_port(config.host, port)) {
    return "cannot listen on " + config.host + ":" + std::to_string(port) + ": " +
           std::strerror(errno) + " (in use? pick another with --listen)";
  }
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_stop_requested) return "";
  }
  reaper = std::make_unique<ConnectionReaper>(port,
                                              std::chrono::milliseconds(config.request_timeout_ms));
  listening(port);
  const bool served = server->listen_after_bind();
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!served && !g_stop_requested)
    return std::string("the server stopped accepting connections: ") + std::strerror(errno);
  return "";
}

// Asks serve() to end. A stop before the server listens is remembered (serve() returns at
// its next step), and one while it starts to listen may be missed by the library: the
// caller repeats it until serve() has returned.
void stop() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_stop_requested = true;
  if (g_server) g_server->stop();
}

bool verify_password(const std::string& password, const std::string& hash) {
  auto data = std::make_unique<crypt_data>();
  std::memset(data.get(), 0, sizeof(crypt_data));
  const char* got = crypt_r(password.c_str(), hash.c_str(), data.get());
  if (!got || got[0] == '*' || std::strlen(got) != hash.size()) return false;
  // Compared in constant time: how far a guess matched must not show in the answer's time.
  unsigned char diff = 0;
  for (std::size_t i = 0; i < hash.size(); ++i)
    diff |= static_cast<unsigned char>(got[i] ^ hash[i]);
  return diff == 0;
}

std::string hash_password(const std::string& password) {
  char salt[CRYPT_GENSALT_OUTPUT_SIZE];
  if (!crypt_gensalt_rn("$2b$", 12, nullptr, 0, salt, sizeof salt)) return "";
  auto data = std::make_unique<crypt_data>();
  std::memset(data.get(), 0, sizeof(crypt_data));
  const char* got = crypt_r(password.c_str(), salt, data.get());
  if (!got || got[0] == '*') return "";
  return got;
}

const HttpModule kModule{serve, stop, verify_password, hash_password};

}  // namespace
}  // namespace queuectl

extern "C" const queuectl::HttpModule* queuectl_http_module() {
  return &queuectl::kModule;
}
