/**
 * The workflow code's history-compatibility generation. Within one baseline every change that alters
 * the commands a turn or session issues goes behind patched(), so any history this baseline recorded
 * replays on any later build of it. The baseline is raised when old branches are deleted (the
 * patched() checks retired, with the fixtures only they replayed): histories recorded before it no
 * longer replay, so runs started by an older baseline must finish on the old build (versioned
 * workers, or drained first; docs/deploy.md, "Moving to a new baseline"). `dev` and `worker` stamp
 * their state directory with it and refuse an older directory that still has open runs
 * (runtime/baseline.ts).
 */
export const BASELINE = 1;
