// A webhook receiver: verify each delivery, answer at once, skip repeats, then do the work.
import { createServer } from 'node:http';
import { createSvcClient, verifyWebhook } from '@svc/sdk';

const secret = process.env.SVC_WEBHOOK_SECRET; // the endpoint's whsec_..., shown when it was created
if (!secret) throw new Error('Set SVC_WEBHOOK_SECRET to the signing secret of your endpoint.');
const svc = createSvcClient(); // SVC_BASE_URL and SVC_API_KEY: to fetch what an event is about
const handled = new Set(); // webhook-ids done: keep them in your database, beside the work they did

const server = createServer((req, res) => {
  /** @type {Buffer[]} */
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    let event;
    try {
      event = verifyWebhook(secret, req.headers, Buffer.concat(chunks)); // the raw bytes, not re-serialised JSON
    } catch (error) {
      console.log(`refused: ${error}`);
      return res.writeHead(400).end();
    }
    res.writeHead(204).end(); // within 10 seconds; the work comes after
    const id = req.headers['webhook-id'];
    if (handled.has(id)) return console.log('repeat of', id); // retries reuse the webhook-id
    handled.add(id);
    work(event).catch((error) => console.error('work failed for', event.id, error));
  });
});
server.listen(Number(process.env.PORT ?? 4000), '127.0.0.1', () => console.log('listening on', server.address()));

/** @param {import('@svc/sdk').Event} event */
async function work(event) {
  if (event.type === 'webhook.ping') return console.log('verified', event.type, event.id);
  const current = await svc.fetchSubject(event); // the resource now; null once deleted (404)
  console.log('verified', event.type, event.id, current ? `${event.subject.type} ${current.id}` : `${event.subject.id} is gone`);
}
