// bench/graphile/drain.mjs — drains graphile-worker's queue of `jobs` no-op jobs with its
// batched local queue, and prints one line: jobs, seconds, jobs_per_s.
//
//   node drain.mjs URL JOBS CONCURRENCY LOCAL_QUEUE_SIZE
//
// The clock starts before the runner connects and stops when the last job's success event
// arrives; graphile-worker deletes a job when it succeeds, so the table is then checked empty.
// completeJobBatchDelay 0 acks the jobs that finished in the same tick in one statement, and
// localQueue fetches up to LOCAL_QUEUE_SIZE jobs a query (graphile-worker 0.17+).
import { Logger, run } from "graphile-worker";
import pg from "pg";

const [url, jobsText, concurrencyText, sizeText] = process.argv.slice(2);
const jobs = Number(jobsText), concurrency = Number(concurrencyText), size = Number(sizeText);
if (!url || !(jobs > 0) || !(concurrency > 0) || !(size > 0)) {
  console.error("usage: node drain.mjs URL JOBS CONCURRENCY LOCAL_QUEUE_SIZE");
  process.exit(2);
}

let done = 0;
let finish;
const drained = new Promise((resolve) => (finish = resolve));
const start = process.hrtime.bigint();
const runner = await run({
  connectionString: url,
  concurrency,
  maxPoolSize: concurrency + 1,
  noHandleSignals: true,
  pollInterval: 1000,
  // Silent: a line of output for every job would be most of what is measured.
  logger: new Logger(() => () => {}),
  taskList: { noop: async () => {} },
  preset: {
    worker: {
      localQueue: { size },
      completeJobBatchDelay: 0,
      failJobBatchDelay: 0,
    },
  },
});
runner.events.on("job:success", () => {
  if (++done === jobs) finish();
});
await drained;
const seconds = Number(process.hrtime.bigint() - start) / 1e9;
await runner.stop();

const client = new pg.Client({ connectionString: url });
await client.connect();
const left = (await client.query("SELECT count(*)::int AS n FROM graphile_worker._private_jobs"))
  .rows[0].n;
await client.end();
if (left !== 0) {
  console.error(`drain.mjs: ${left} job(s) left in graphile_worker._private_jobs`);
  process.exit(1);
}
console.log(`graphile jobs=${jobs} seconds=${seconds.toFixed(3)} jobs_per_s=${Math.round(jobs / seconds)}`);
