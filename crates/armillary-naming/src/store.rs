//! [`Store`]: where a naming service keeps its contexts and bindings, an
//! SQLite database: a file for a persistent service, an in-memory
//! database for one that lives as long as its process. Both run the same
//! statements.
//!
//! Every naming operation is one transaction ([`Store::read`] or
//! [`Store::write`]); a write commits before the servant returns, so
//! before the reply leaves: a client that has its answer has a binding
//! on disk. Writes take SQLite's write lock when they begin
//! (`BEGIN IMMEDIATE`), so operations are serialized by the database
//! even when several processes open one file.
//!
//! # Durability
//!
//! A file store runs in WAL mode with `synchronous=FULL`: the WAL is
//! synced at every commit. `NORMAL` would already survive the service
//! being killed (a commit's WAL frames are written before it returns;
//! only the sync is deferred), but could lose the last commits when the
//! machine itself goes down, after their clients were told they were
//! done. A naming service writes rarely and each write is a promise, so
//! it pays one sync per write.
//!
//! # Schema (version 1, in `PRAGMA user_version`)
//!
//! - `context(id)`: the live contexts; the root is 0. Ids are never
//!   reused (`AUTOINCREMENT`), so a reference to a destroyed context
//!   never reaches a newer one.
//! - `binding(context, id, kind, type, object, local_context)`: one row
//!   per binding; `type` is 0 for an object, 1 for a context; `object` is
//!   the bound reference as a CDR encapsulation of its IOR, handed back
//!   byte for byte; `local_context` is the id of the bound context when
//!   it is one of this service's, which is how compound names are
//!   followed without calling ourselves.

use std::path::Path;
use std::time::Duration;

use armillary::giop::cdr::{CdrDecode, CdrReader};
use armillary::giop::{ByteOrder, GiopVersion};
use armillary::{CompletionStatus, ObjectRef, SystemException};
use rusqlite::{params, Connection, ErrorCode, OptionalExtension, TransactionBehavior};

use crate::cos_naming::{Binding, BindingType, NameComponent};
use crate::minor;

/// The schema version this code reads and writes.
const SCHEMA_VERSION: i64 = 1;

/// How long an operation waits for another process's write to finish
/// before it gives up with TRANSIENT ([`minor::STORE_BUSY`]).
pub const STORE_BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// The id of the root context.
pub(crate) const ROOT: u64 = 0;

const SCHEMA: &str = "
    CREATE TABLE context (id INTEGER PRIMARY KEY AUTOINCREMENT);
    CREATE TABLE binding (
        context INTEGER NOT NULL REFERENCES context(id),
        id TEXT NOT NULL,
        kind TEXT NOT NULL,
        type INTEGER NOT NULL CHECK (type IN (0, 1)),
        object BLOB NOT NULL,
        local_context INTEGER,
        PRIMARY KEY (context, id, kind)
    ) WITHOUT ROWID;
    INSERT INTO context (id) VALUES (0);
    PRAGMA user_version = 1;
";

/// Why a store could not be opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// SQLite refused: the file cannot be created or read, is not a
    /// database, or is locked by another process for longer than
    /// [`STORE_BUSY_TIMEOUT`].
    #[error("SQLite failed")]
    Sqlite(#[from] rusqlite::Error),
    /// The directory to hold the store could not be created.
    #[error("cannot create the store's directory")]
    CreateDirectory(#[source] std::io::Error),
    /// The database was written by another version of this service (or
    /// by something else altogether).
    #[error(
        "the database has schema version {found}; this service reads version {SCHEMA_VERSION}"
    )]
    UnknownSchema {
        /// Its `PRAGMA user_version`.
        found: i64,
    },
}

/// One binding as the store holds it.
#[derive(Clone)]
pub(crate) struct Bound {
    pub(crate) object: ObjectRef,
    pub(crate) binding_type: BindingType,
    /// The context of this service the binding names, if it is one.
    pub(crate) local_context: Option<u64>,
}

/// A naming service's database connection.
pub(crate) struct Store {
    conn: Connection,
}

impl Store {
    /// Opens (creating it if needed) the store at `path`.
    pub(crate) fn open(path: &Path) -> Result<Store, StoreError> {
        let conn = Connection::open(path)?;
        conn.busy_timeout(STORE_BUSY_TIMEOUT)?;
        // journal_mode answers with the mode now in force.
        let _mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))?;
        conn.execute_batch("PRAGMA synchronous = FULL")?;
        Store::set_up(conn)
    }

    /// An empty store in memory.
    pub(crate) fn in_memory() -> Result<Store, StoreError> {
        Store::set_up(Connection::open_in_memory()?)
    }

    fn set_up(mut conn: Connection) -> Result<Store, StoreError> {
        conn.execute_batch("PRAGMA foreign_keys = ON")?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let version: i64 = tx.query_row("PRAGMA user_version", [], |row| row.get(0))?;
        match version {
            0 => tx.execute_batch(SCHEMA)?,
            SCHEMA_VERSION => {}
            found => return Err(StoreError::UnknownSchema { found }),
        }
        tx.commit()?;
        Ok(Store { conn })
    }

    /// A transaction that only reads.
    pub(crate) fn read(&mut self) -> Result<Tx<'_>, SystemException> {
        self.begin(TransactionBehavior::Deferred)
    }

    /// A transaction that writes: it holds the database's write lock
    /// from the start, so what it reads stays true until it commits.
    pub(crate) fn write(&mut self) -> Result<Tx<'_>, SystemException> {
        self.begin(TransactionBehavior::Immediate)
    }

    fn begin(&mut self, behavior: TransactionBehavior) -> Result<Tx<'_>, SystemException> {
        self.conn
            .transaction_with_behavior(behavior)
            .map(Tx)
            .map_err(failed(CompletionStatus::No))
    }
}

/// The system exception for a failure of the store.
fn failed(completed: CompletionStatus) -> impl Fn(rusqlite::Error) -> SystemException {
    move |e| match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => {
            SystemException::transient(minor::STORE_BUSY, CompletionStatus::No)
        }
        _ => SystemException::persist_store(minor::STORE_FAILED, completed),
    }
}

fn corrupt() -> SystemException {
    SystemException::persist_store(minor::STORE_CORRUPT, CompletionStatus::No)
}

/// A context id as SQLite stores it. Ids come from SQLite's own
/// `INTEGER PRIMARY KEY`, so they are never negative.
fn sql_id(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn from_sql_id(n: i64) -> Result<u64, SystemException> {
    u64::try_from(n).map_err(|_| corrupt())
}

fn encode_reference(object: &ObjectRef) -> Result<Vec<u8>, SystemException> {
    object
        .ior()
        .to_encapsulation(ByteOrder::Little)
        .map_err(|e| SystemException::from_cdr_error(&e, CompletionStatus::No))
}

/// The reference stored as `bytes`. Decoded as a request's arguments
/// are, so inside an upcall it belongs to the ORB serving the request.
fn decode_reference(bytes: &[u8]) -> Result<ObjectRef, SystemException> {
    let mut reader =
        CdrReader::encapsulation(bytes, GiopVersion::V1_2, 0).map_err(|_| corrupt())?;
    ObjectRef::decode(&mut reader).map_err(|_| corrupt())
}

fn binding_type(code: i64) -> Result<BindingType, SystemException> {
    match code {
        0 => Ok(BindingType::Nobject),
        1 => Ok(BindingType::Ncontext),
        _ => Err(corrupt()),
    }
}

fn type_code(binding_type: BindingType) -> i64 {
    match binding_type {
        BindingType::Nobject => 0,
        BindingType::Ncontext => 1,
    }
}

/// One operation's transaction; dropped without [`commit`](Self::commit),
/// it rolls back.
pub(crate) struct Tx<'c>(rusqlite::Transaction<'c>);

impl Tx<'_> {
    /// Makes the transaction's writes durable.
    pub(crate) fn commit(self) -> Result<(), SystemException> {
        self.0.commit().map_err(failed(CompletionStatus::Maybe))
    }

    /// Whether context `n` exists (was made and not destroyed).
    pub(crate) fn context_exists(&self, n: u64) -> Result<bool, SystemException> {
        self.0
            .prepare_cached("SELECT 1 FROM context WHERE id = ?1")
            .and_then(|mut s| s.exists(params![sql_id(n)]))
            .map_err(failed(CompletionStatus::No))
    }

    /// The binding of `name` in context `context`.
    pub(crate) fn binding(
        &self,
        context: u64,
        name: &NameComponent,
    ) -> Result<Option<Bound>, SystemException> {
        let row = self
            .0
            .prepare_cached(
                "SELECT type, object, local_context FROM binding
                 WHERE context = ?1 AND id = ?2 AND kind = ?3",
            )
            .and_then(|mut s| {
                s.query_row(params![sql_id(context), name.id, name.kind], |row| {
                    Ok((
                        row.get::<_, i64>(0)?,
                        row.get::<_, Vec<u8>>(1)?,
                        row.get::<_, Option<i64>>(2)?,
                    ))
                })
                .optional()
            })
            .map_err(failed(CompletionStatus::No))?;
        let Some((code, object, local_context)) = row else {
            return Ok(None);
        };
        Ok(Some(Bound {
            object: decode_reference(&object)?,
            binding_type: binding_type(code)?,
            local_context: local_context.map(from_sql_id).transpose()?,
        }))
    }

    /// Binds `name` in `context`, replacing what was bound there.
    pub(crate) fn put(
        &self,
        context: u64,
        name: &NameComponent,
        bound: &Bound,
    ) -> Result<(), SystemException> {
        let object = encode_reference(&bound.object)?;
        self.0
            .prepare_cached(
                "INSERT OR REPLACE INTO binding (context, id, kind, type, object, local_context)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )
            .and_then(|mut s| {
                s.execute(params![
                    sql_id(context),
                    name.id,
                    name.kind,
                    type_code(bound.binding_type),
                    object,
                    bound.local_context.map(sql_id),
                ])
            })
            .map(drop)
            .map_err(failed(CompletionStatus::No))
    }

    /// Unbinds `name` in `context`; false when it was not bound.
    pub(crate) fn remove(
        &self,
        context: u64,
        name: &NameComponent,
    ) -> Result<bool, SystemException> {
        self.0
            .prepare_cached("DELETE FROM binding WHERE context = ?1 AND id = ?2 AND kind = ?3")
            .and_then(|mut s| s.execute(params![sql_id(context), name.id, name.kind]))
            .map(|rows| rows > 0)
            .map_err(failed(CompletionStatus::No))
    }

    /// Makes an empty context and returns its id.
    pub(crate) fn new_context(&self) -> Result<u64, SystemException> {
        self.0
            .prepare_cached("INSERT INTO context DEFAULT VALUES")
            .and_then(|mut s| s.insert([]))
            .map_err(failed(CompletionStatus::No))
            .and_then(from_sql_id)
    }

    /// Forgets context `n`, which must have no bindings.
    pub(crate) fn remove_context(&self, n: u64) -> Result<(), SystemException> {
        self.0
            .prepare_cached("DELETE FROM context WHERE id = ?1")
            .and_then(|mut s| s.execute(params![sql_id(n)]))
            .map(drop)
            .map_err(failed(CompletionStatus::No))
    }

    /// Whether context `n` has no bindings.
    pub(crate) fn is_empty(&self, n: u64) -> Result<bool, SystemException> {
        self.0
            .prepare_cached("SELECT 1 FROM binding WHERE context = ?1 LIMIT 1")
            .and_then(|mut s| s.exists(params![sql_id(n)]))
            .map(|any| !any)
            .map_err(failed(CompletionStatus::No))
    }

    /// The bindings of context `n`, in the order of their names' ids and
    /// kinds (as bytes).
    pub(crate) fn list(&self, n: u64) -> Result<Vec<Binding>, SystemException> {
        let mut statement = self
            .0
            .prepare_cached(
                "SELECT id, kind, type FROM binding WHERE context = ?1 ORDER BY id, kind",
            )
            .map_err(failed(CompletionStatus::No))?;
        let rows = statement
            .query_map(params![sql_id(n)], |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, i64>(2)?,
                ))
            })
            .map_err(failed(CompletionStatus::No))?;
        let mut list = Vec::new();
        for row in rows {
            let (id, kind, code) = row.map_err(failed(CompletionStatus::No))?;
            list.push(Binding {
                binding_name: vec![NameComponent { id, kind }],
                binding_type: binding_type(code)?,
            });
        }
        Ok(list)
    }
}
