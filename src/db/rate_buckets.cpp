#include "db/rate_buckets.hpp"

#include <soci/soci.h>

#include "db/row_reader.hpp"

namespace queuectl {

using soci::into;
using soci::use;

std::optional<RateRead> read_rate(soci::session& s, const std::string& sql,
                                  const std::string& queue, bool with_due) {
  int count = 0, burst = 0, per_key = 0, due = 0;
  long long period_ms = 0, refreshed_ms = 0, now_ms = 0;
  double tokens = 0;
  soci::indicator count_ind = soci::i_null, tokens_ind = soci::i_null, refreshed_ind = soci::i_null;
  std::string q = queue;
  soci::statement st(s);
  st.exchange(into(count, count_ind));
  st.exchange(into(period_ms));
  st.exchange(into(burst));
  st.exchange(into(per_key));
  st.exchange(into(tokens, tokens_ind));
  st.exchange(into(refreshed_ms, refreshed_ind));
  st.exchange(into(now_ms));
  if (with_due) st.exchange(into(due));
  st.exchange(use(q, "queue"));
  prepare_once(st, sql);
  if (!st.execute(true) || count_ind != soci::i_ok) return std::nullopt;
  RateRead r;
  r.limit.count = count;
  r.limit.period_ms = period_ms;
  r.limit.burst = burst;
  r.limit.per_key = per_key != 0;
  if (tokens_ind == soci::i_ok) r.bucket.tokens = tokens;
  if (refreshed_ind == soci::i_ok) r.bucket.refreshed_ms = refreshed_ms;
  r.now_ms = now_ms;
  r.due = due != 0;
  return r;
}

void spend_rate(soci::session& s, const RateSteps& q, const std::string& queue,
                const RateRead& rate, double tokens, int keyless,
                const std::vector<std::string>& keys) {
  std::string qn = queue;
  long long now_ms = rate.now_ms;
  if (keyless > 0) {
    double left = tokens - keyless;
    s << q.spend, use(left, "tokens"), use(now_ms, "now_ms"), use(qn, "queue");
  }
  if (keys.empty()) return;
  double fresh = rate.limit.burst - 1, per_ms = rate.limit.per_ms();
  std::string key;
  soci::statement st(s);
  st.exchange(use(qn, "queue"));
  st.exchange(use(key, "group_key"));
  st.exchange(use(fresh, "fresh"));
  st.exchange(use(now_ms, "now_ms"));
  st.exchange(use(per_ms, "per_ms"));
  st.alloc();
  st.prepare(q.spend_key);
  st.define_and_bind();
  for (const std::string& k : keys) {
    key = k;
    st.execute(true);
  }
}

}  // namespace queuectl
