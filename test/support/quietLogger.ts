/** A logger for the SDK pieces a test runs itself (bundler, mock activities): errors only. */
export const quietLogger = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error: console.error };
