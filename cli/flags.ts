// The library names its options (`turn`, `by`, …) in its errors; on the command line they read as flags.
const FLAG_OF: Record<string, string> = {
  turn: '--turn',
  by: '--by',
  decision: '--decision',
  result: '--result',
  skipFence: '--now',
  target: '--target',
  always: '--always',
  arguments: '--args',
  set: '--set',
  model: '--model',
  toolModules: '--tools',
  taskQueue: '--task-queue',
  maxIterations: '--max-iterations',
  // sendMessage's per-turn and per-session limits: the CLI's only ones are the iteration caps.
  options: '--max-iterations',
  sessionOptions: '--session-max-iterations',
  // createSchedule's.
  cron: '--cron',
  every: '--every',
  scheduleId: '--id',
  timezone: '--timezone',
  // worker: Worker Deployment Versioning (runtime/deployment.ts).
  deploymentName: '--deployment-name',
  buildId: '--build-id',
};

/** A library error's message with each option named as its command-line flag. */
export function inCliTerms(message: string): string {
  return message.replace(/`(\w+)`/g, (whole, name: string) => FLAG_OF[name] ?? whole);
}
