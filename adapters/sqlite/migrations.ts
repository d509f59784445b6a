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
  // 3: fine-tuning (protocol/fine-tuning/records.ts): uploaded training files, jobs and their events, the
  // latest checkpoint of each running job, fine-tuned models with their adapters, and training tokens
  // per job (counted once: the job id is the key). `seq` orders lists newest first and pages them.
  `
  CREATE TABLE ft_files (
    seq         INTEGER PRIMARY KEY,
    id          TEXT    NOT NULL UNIQUE,
    account_id  INTEGER NOT NULL REFERENCES accounts (id),
    filename    TEXT    NOT NULL,
    purpose     TEXT    NOT NULL,
    bytes       INTEGER NOT NULL CHECK (bytes >= 0),
    lines       INTEGER NOT NULL CHECK (lines >= 0),
    content     BLOB    NOT NULL,
    created_at  INTEGER NOT NULL
  ) STRICT;
  CREATE INDEX ft_files_account ON ft_files (account_id, seq);

  CREATE TABLE ft_jobs (
    seq               INTEGER PRIMARY KEY,
    id                TEXT    NOT NULL UNIQUE,
    account_id        INTEGER NOT NULL REFERENCES accounts (id),
    key_id            INTEGER NOT NULL REFERENCES api_keys (id),
    model             TEXT    NOT NULL,
    specialist        TEXT    NOT NULL,
    training_file     TEXT    NOT NULL,
    validation_file   TEXT,
    hyperparameters   TEXT    NOT NULL,
    suffix            TEXT,
    seed              INTEGER NOT NULL,
    status            TEXT    NOT NULL CHECK (status IN ('validating_files', 'queued', 'running', 'succeeded', 'failed', 'cancelled')),
    fine_tuned_model  TEXT,
    error             TEXT,
    trained_tokens    INTEGER,
    runner            TEXT,
    lease_until       INTEGER NOT NULL DEFAULT 0,
    created_at        INTEGER NOT NULL,
    finished_at       INTEGER
  ) STRICT;
  CREATE INDEX ft_jobs_account ON ft_jobs (account_id, seq);
  CREATE INDEX ft_jobs_status ON ft_jobs (status, seq);

  CREATE TABLE ft_job_events (
    seq         INTEGER PRIMARY KEY,
    id          TEXT    NOT NULL UNIQUE,
    job_id      TEXT    NOT NULL REFERENCES ft_jobs (id),
    created_at  INTEGER NOT NULL,
    level       TEXT    NOT NULL CHECK (level IN ('info', 'warn', 'error')),
    message     TEXT    NOT NULL,
    type        TEXT    NOT NULL CHECK (type IN ('message', 'metrics')),
    data        TEXT
  ) STRICT;
  CREATE INDEX ft_job_events_job ON ft_job_events (job_id, seq);

  CREATE TABLE ft_checkpoints (
    job_id      TEXT    PRIMARY KEY REFERENCES ft_jobs (id),
    step        INTEGER NOT NULL,
    state       BLOB    NOT NULL,
    created_at  INTEGER NOT NULL
  ) STRICT;

  CREATE TABLE ft_models (
    name        TEXT    PRIMARY KEY,
    account_id  INTEGER NOT NULL REFERENCES accounts (id),
    specialist  TEXT    NOT NULL,
    job_id      TEXT    NOT NULL UNIQUE REFERENCES ft_jobs (id),
    adapter     BLOB    NOT NULL,
    created_at  INTEGER NOT NULL
  ) STRICT;
  CREATE INDEX ft_models_account ON ft_models (account_id);

  CREATE TABLE ft_usage (
    job_id          TEXT    PRIMARY KEY REFERENCES ft_jobs (id),
    key_id          INTEGER NOT NULL REFERENCES api_keys (id),
    period_start    INTEGER NOT NULL,
    trained_tokens  INTEGER NOT NULL CHECK (trained_tokens >= 0)
  ) STRICT;
  CREATE INDEX ft_usage_key_period ON ft_usage (key_id, period_start);
  `,
];
