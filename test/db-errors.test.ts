import { describe, expect, it } from 'vitest';
import { DatabaseUnavailableError } from '../src/db/db.js';
import { connectFailed, connectionLost, databaseDown, driverError, refusedByServer } from '../src/db/errors.js';

const failure = (code: string, message = code) => Object.assign(new Error(message), { code });

describe("the driver's errors as the service's", () => {
  it("takes Node's socket errors for a lost connection, even those of five letters like a SQLSTATE", () => {
    // What a write gets on a socket whose server process was ended (pg_terminate_backend) before its close is seen.
    for (const code of ['EPIPE', 'ECONNRESET', 'CONNECTION_CLOSED']) {
      const error = driverError(failure(code, 'This socket has been ended by the other party'));
      expect(error, code).toBeInstanceOf(DatabaseUnavailableError);
      expect(connectionLost(error), code).toBe(true);
      expect(databaseDown(error), code).toBe(true);
      expect(connectFailed(error), code).toBe(false);
      expect(refusedByServer(failure(code)), code).toBe(false);
    }
  });

  it("keeps the server's refusals as they are, and tells the server's unavailability from them", () => {
    const unique = driverError(Object.assign(failure('23505'), { constraint_name: 'products_pkey' }));
    expect(unique).not.toBeInstanceOf(DatabaseUnavailableError);
    expect((unique as { constraint?: string }).constraint).toBe('products_pkey');
    expect(refusedByServer(failure('23505'))).toBe(true);

    const shutdown = driverError(failure('57P01'));
    expect(shutdown).toBeInstanceOf(DatabaseUnavailableError);
    expect(connectionLost(shutdown)).toBe(false);
    expect(connectFailed(driverError(failure('53300')))).toBe(true);
    expect(connectFailed(driverError(failure('ECONNREFUSED')))).toBe(true);
  });
});
