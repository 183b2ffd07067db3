import nodemailer, { type Transporter } from 'nodemailer';
import { ActionError } from './action.errors.js';

export interface Mail {
  to: string[];
  subject: string;
  text: string;
}

/**
 * SMTP through nodemailer, one transport for the process (SMTP_URL, SMTP_FROM). The SMTP server
 * is the operator's, not user input, so it is not subject to the outbound guard.
 */
export class MailSender {
  private transport: Transporter | undefined;

  constructor(
    private readonly smtp: { url: string | undefined; from: string },
    private readonly timeoutMs: number,
  ) {}

  async send(mail: Mail, signal: AbortSignal): Promise<{ messageId: string; response: string }> {
    if (!this.smtp.url) {
      throw new ActionError('email is not configured: set SMTP_URL to send email actions', false);
    }
    this.transport ??= nodemailer.createTransport({
      url: this.smtp.url,
      connectionTimeout: this.timeoutMs,
      greetingTimeout: this.timeoutMs,
      socketTimeout: this.timeoutMs,
    } as Parameters<typeof nodemailer.createTransport>[0]);
    const sending = this.transport.sendMail({
      from: this.smtp.from,
      to: mail.to,
      subject: mail.subject,
      text: mail.text,
    }) as Promise<{ messageId: string; response: string }>;
    try {
      return await raceAbort(sending, signal);
    } catch (err) {
      throw classify(err, signal);
    }
  }

  close(): void {
    this.transport?.close();
  }
}

function classify(err: unknown, signal: AbortSignal): ActionError {
  if (err instanceof ActionError) return err;
  if (signal.aborted && signal.reason instanceof ActionError) return signal.reason;
  const e = err as { code?: string; responseCode?: number; message?: string };
  const code = e.responseCode;
  // 5xx SMTP replies, refused envelopes and auth failures repeat on every attempt.
  const permanent = (code !== undefined && code >= 500) || e.code === 'EENVELOPE' || e.code === 'EAUTH';
  return new ActionError(`smtp: ${e.message ?? String(err)}`, !permanent, code);
}

function raceAbort<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
