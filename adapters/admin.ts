/**
 * What `svc keys` and `svc plan` need from a store, the same on every backend: accounts, keys, plans.
 * Async because PostgreSQL answers later; SQLite's synchronous AccountAdmin is wrapped (SqliteAdmin).
 * Both check plans and name keys by the same rules, with the same messages (account-rules.ts).
 */
import type { KeyMode } from '../protocol/keys.ts';
import type { AccountRecord } from '../protocol/store.ts';
import type { CreatedKey, KeyListing, NewAccount, PlanChange } from './account-rules.ts';
import type { AccountAdmin } from './sqlite/accounts.ts';

export type { CreatedKey, KeyListing, NewAccount, PlanChange } from './account-rules.ts';

export interface Admin {
  /** A new account (trial starting `now`) on `plan`, with its first key. Returns the key's secret once. */
  createAccount(opts: NewAccount): Promise<CreatedKey>;
  /** Another key on an existing account (rotation: create the new one, then revoke the old). */
  addKey(accountId: number, mode: KeyMode, now: number): Promise<CreatedKey>;
  /** The key a CLI argument names: the whole key, or a prefix of its public prefix that matches exactly one key. */
  resolveKey(arg: string): Promise<KeyListing>;
  listKeys(opts: { includeRevoked: boolean; now: number }): Promise<KeyListing[]>;
  /** Revokes a key; revoking a revoked key is an error so a mistyped prefix is noticed. */
  revokeKey(keyId: number, now: number): Promise<void>;
  setPlan(accountId: number, change: PlanChange, now: number): Promise<AccountRecord>;
  account(id: number): Promise<AccountRecord>;
  /** Closes the connection it was opened with (once; later calls do nothing). */
  close(): Promise<void>;
}

/** The SQLite AccountAdmin behind the async Admin; a thrown error becomes a rejection. */
export class SqliteAdmin implements Admin {
  constructor(
    readonly accounts: AccountAdmin,
    private readonly onClose: () => void | Promise<void> = () => {},
  ) {}

  async createAccount(opts: NewAccount): Promise<CreatedKey> {
    return this.accounts.createAccount(opts);
  }

  async addKey(accountId: number, mode: KeyMode, now: number): Promise<CreatedKey> {
    return this.accounts.addKey(accountId, mode, now);
  }

  async resolveKey(arg: string): Promise<KeyListing> {
    return this.accounts.resolveKey(arg);
  }

  async listKeys(opts: { includeRevoked: boolean; now: number }): Promise<KeyListing[]> {
    return this.accounts.listKeys(opts);
  }

  async revokeKey(keyId: number, now: number): Promise<void> {
    this.accounts.revokeKey(keyId, now);
  }

  async setPlan(accountId: number, change: PlanChange, now: number): Promise<AccountRecord> {
    return this.accounts.setPlan(accountId, change, now);
  }

  async account(id: number): Promise<AccountRecord> {
    return this.accounts.account(id);
  }

  async close(): Promise<void> {
    await this.onClose();
  }
}
