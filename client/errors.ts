/** An error of the library's functions: a message a person can act on, and a code the CLI's exit status reads. */
export class OpenWorkerError extends Error {
  constructor(
    message: string,
    readonly code: 'bad_input' | 'not_found' | 'no_worker' | 'timeout' | 'ignored' | 'failed' = 'failed',
  ) {
    super(message);
    this.name = 'OpenWorkerError';
  }
}
