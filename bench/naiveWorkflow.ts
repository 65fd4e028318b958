import { proxyActivities } from '@temporalio/workflow';

// B2, the naive Temporal design: one workflow per turn whose single activity runs the whole
// model/tool loop. Durable as a whole, but a crash mid-loop reruns every tool call of the turn.

const { runTurnLoop } = proxyActivities<{ runTurnLoop(message: string): Promise<{ text: string; calls: number }> }>({
  startToCloseTimeout: '5 minutes',
});

export async function naiveTurn(message: string): Promise<{ text: string; calls: number }> {
  return runTurnLoop(message);
}
