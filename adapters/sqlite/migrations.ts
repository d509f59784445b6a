/**
 * Schema versions, applied in order; PRAGMA user_version records how many have run. Append new
 * migrations, never edit one that has shipped.
 */
export const MIGRATIONS: readonly string[] = [
  // 1: accounts, their keys (hashes only) and per-key usage counters per billing period and specialist.
  `
  CREATE TABLE accounts (
    id             INTEGER PRIMARY KEY,
    email          TEXT,
    plan           TEXT    NOT NULL,
    paid           INTEGER NOT NULL DEFAULT 0 CHECK (paid IN (0, 1)),
    trial_ends_at  INTEGER NOT NULL,
    rpm_limit      INTEGER CHECK (rpm_limit IS NULL OR rpm_limit > 0),
    monthly_limit  INTEGER CHECK (monthly_limit IS NULL OR monthly_limit > 0),
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL
  ) STRICT;

  CREATE TABLE api_keys (
    id          INTEGER PRIMARY KEY,
    account_id  INTEGER NOT NULL REFERENCES accounts (id),
    prefix      TEXT    NOT NULL UNIQUE,
    hash        BLOB    NOT NULL UNIQUE CHECK (length(hash) = 32),
    mode        TEXT    NOT NULL CHECK (mode IN ('live', 'test')),
    created_at  INTEGER NOT NULL,
    revoked_at  INTEGER
  ) STRICT;
  CREATE INDEX api_keys_account ON api_keys (account_id);

  CREATE TABLE usage (
    key_id             INTEGER NOT NULL REFERENCES api_keys (id),
    period_start       INTEGER NOT NULL,
    specialist         TEXT    NOT NULL,
    requests           INTEGER NOT NULL CHECK (requests >= 0),
    prompt_tokens      INTEGER NOT NULL CHECK (prompt_tokens >= 0),
    completion_tokens  INTEGER NOT NULL CHECK (completion_tokens >= 0),
    PRIMARY KEY (key_id, period_start, specialist)
  ) STRICT, WITHOUT ROWID;
  `,
  // 2: conversation memory for /v1/infer (protocol/conversations.ts): turns per key and conversation id.
  `
  CREATE TABLE conversation_turns (
    key_id           INTEGER NOT NULL REFERENCES api_keys (id),
    conversation_id  TEXT    NOT NULL,
    seq              INTEGER NOT NULL,
    role             TEXT    NOT NULL CHECK (role IN ('user', 'assistant')),
    content          TEXT    NOT NULL,
    created_at       INTEGER NOT NULL,
    PRIMARY KEY (key_id, conversation_id, seq)
  ) STRICT, WITHOUT ROWID;
  `,
];
