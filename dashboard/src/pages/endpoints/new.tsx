import { useState } from 'react';
import { Link } from 'wouter';
import { useApp } from '../../api/app-state';
import { useAction } from '../../api/hooks';
import { SecretOnce } from '../../components/secret-once';
import { EndpointForm, type EndpointFields } from './form';

/** A new endpoint; its signing secret is shown once, right after. */
export function NewEndpoint() {
  const { client, can } = useApp();
  const [created, setCreated] = useState<{ id: string; secret?: string; publicKey: string | null } | null>(null);
  const create = useAction(async (fields: EndpointFields) => {
    const { headers, ...rest } = fields;
    const body = { ...rest, url: fields.url ?? '', subscribedEvents: fields.subscribedEvents as [string, ...string[]], ...(Object.keys(headers).length ? { headers } : {}) };
    const endpoint = await client.POST('/v1/webhooks/endpoints', { body });
    setCreated({ id: endpoint.id, secret: endpoint.secret, publicKey: endpoint.publicKey });
  });

  if (!can('workspace:developer:write')) {
    return (
      <article className="empty">
        <h1>New endpoint</h1>
        <p>Your role in this workspace reads endpoints but does not change them: ask an owner or admin.</p>
      </article>
    );
  }
  return (
    <section>
      <nav aria-label="Breadcrumb">
        <ul>
          <li>
            <Link href="/endpoints">Endpoints</Link>
          </li>
          <li>New</li>
        </ul>
      </nav>
      <h1>New endpoint</h1>
      {created && created.secret === undefined ? (
        <article data-testid="created-public-key">
          <p>
            Deliveries are signed with the endpoint's private key (v1a), which stays in the service. Your receiver verifies them with its public key:
          </p>
          <p>
            <code className="secret">{created.publicKey}</code>
          </p>
          <Link href={`/endpoints/${created.id}`} role="button">
            Go to the endpoint
          </Link>
        </article>
      ) : created ? (
        <SecretOnce label="Signing secret" value={created.secret!}>
          <p>Your receiver verifies each delivery's signature with it (see docs/receiving-webhooks.md).</p>
          <Link href={`/endpoints/${created.id}`} role="button">
            Go to the endpoint
          </Link>
        </SecretOnce>
      ) : (
        <EndpointForm submitLabel="Create endpoint" onSubmit={(f) => void create.run(f)} error={create.error} running={create.running} />
      )}
    </section>
  );
}
