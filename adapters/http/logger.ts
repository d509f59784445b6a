/** JSON logs on stderr (stdout stays for command output). Keys and prompts never reach a log line. */
import pino from 'pino';

export type HttpLogger = pino.Logger;

export function createLogger(level: string = process.env.SVC_LOG_LEVEL ?? 'info'): HttpLogger {
  return pino(
    {
      level,
      base: { service: 'svc' },
      // Belt and braces: nothing logs headers or bodies, but if someone adds it, these stay out.
      redact: { paths: ['authorization', 'headers.authorization', 'req.headers.authorization', 'body', 'prompt', 'messages'], censor: '[redacted]' },
    },
    // Synchronous: the line announcing the address must be out before anyone waits for it.
    pino.destination({ dest: 2, sync: true }),
  );
}
