//! The reactor: one epoll instance (through mio) that tells the server
//! which sockets are ready, shared by the threads of the concurrency model.
//!
//! With one thread this is the single-threaded reactive model. With N
//! threads it is Leader/Followers: the thread that holds the poll lock is
//! the leader and waits for events; when events arrive it gives the lock to
//! the next follower and handles what it got, so there is always a thread
//! waiting and no hand-off of work between threads.
//!
//! **Invariant:** the poll lock is never held while a handler runs.

use std::collections::VecDeque;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mio::{Events, Interest, Poll, Registry, Token, Waker};
use parking_lot::{Mutex, RwLock};

use crate::slots::{SlotRef, SlotTable};

/// Something registered with the reactor: a listener or a connection.
pub(crate) trait EventHandler: Send + Sync + 'static {
    /// The socket is ready. Called on whichever thread leads at the time;
    /// the handler serialises its own reads.
    fn ready(&self, reactor: &Arc<Reactor>, readable: bool, writable: bool);

    /// Called about once a second (for idle checks); the default does
    /// nothing.
    fn tick(&self, _reactor: &Arc<Reactor>) {}
}

const WAKER: Token = Token(usize::MAX);

/// A posted piece of work, run by an event loop thread.
pub(crate) type Task = Box<dyn FnOnce() + Send>;

pub(crate) struct Reactor {
    poll: Mutex<(Poll, Events)>,
    registry: Registry,
    waker: Waker,
    handlers: RwLock<SlotTable<Arc<dyn EventHandler>>>,
    tasks: Mutex<VecDeque<Task>>,
    stopping: AtomicBool,
}

/// A reactor token is the handler's slot: generation in the high half,
/// index in the low half.
fn token(slot: SlotRef) -> Token {
    Token(((u64::from(slot.generation) << 32) | u64::from(slot.index)) as usize)
}

fn slot(token: Token) -> SlotRef {
    SlotRef {
        index: (token.0 as u64 & 0xffff_ffff) as u32,
        generation: (token.0 as u64 >> 32) as u32,
    }
}

impl Reactor {
    pub fn new() -> io::Result<Arc<Reactor>> {
        let poll = Poll::new()?;
        let registry = poll.registry().try_clone()?;
        let waker = Waker::new(&registry, WAKER)?;
        Ok(Arc::new(Reactor {
            poll: Mutex::new((poll, Events::with_capacity(256))),
            registry,
            waker,
            handlers: RwLock::new(SlotTable::default()),
            tasks: Mutex::new(VecDeque::new()),
            stopping: AtomicBool::new(false),
        }))
    }

    /// Registers `source` for `interest`, with `make` building its handler
    /// from the token it was given.
    pub fn register<S: mio::event::Source + ?Sized>(
        &self,
        source: &mut S,
        interest: Interest,
        handler: Arc<dyn EventHandler>,
    ) -> io::Result<Token> {
        let tok = token(self.handlers.write().insert(handler));
        if let Err(e) = self.registry.register(source, tok, interest) {
            self.forget(tok);
            return Err(e);
        }
        Ok(tok)
    }

    /// Changes what `source` is watched for.
    pub fn reregister<S: mio::event::Source + ?Sized>(
        &self,
        source: &mut S,
        tok: Token,
        interest: Interest,
    ) -> io::Result<()> {
        self.registry.reregister(source, tok, interest)
    }

    /// Stops watching `source` and drops its handler.
    pub fn deregister<S: mio::event::Source + ?Sized>(&self, source: &mut S, tok: Token) {
        let _ = self.registry.deregister(source);
        self.forget(tok);
    }

    fn forget(&self, tok: Token) {
        self.handlers.write().remove(slot(tok));
    }

    fn handler(&self, tok: Token) -> Option<Arc<dyn EventHandler>> {
        self.handlers.read().get(slot(tok)).cloned()
    }

    /// Queues `task` to run on an event loop thread soon.
    pub fn post(&self, task: Task) {
        self.tasks.lock().push_back(task);
        let _ = self.waker.wake();
    }

    /// Asks every event loop to return.
    pub fn stop(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        let _ = self.waker.wake();
    }

    pub fn is_stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }

    /// Runs posted tasks, then waits (as leader) up to `timeout` for events
    /// and handles them. Returns whether anything was done.
    pub fn turn(self: &Arc<Self>, timeout: Option<Duration>) -> io::Result<bool> {
        let mut did = self.run_tasks();
        let ready: Vec<(Token, bool, bool)> = {
            let mut guard = self.poll.lock();
            let (poll, events) = &mut *guard;
            match poll.poll(events, timeout) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => return Ok(did),
                Err(e) => return Err(e),
            }
            events
                .iter()
                .map(|e| {
                    (
                        e.token(),
                        e.is_readable() || e.is_read_closed() || e.is_error(),
                        e.is_writable() || e.is_write_closed(),
                    )
                })
                .collect()
            // The poll lock is released here: a follower becomes leader.
        };
        for (tok, readable, writable) in ready {
            if tok == WAKER {
                continue;
            }
            if let Some(handler) = self.handler(tok) {
                handler.ready(self, readable, writable);
                did = true;
            }
        }
        did |= self.run_tasks();
        Ok(did)
    }

    fn run_tasks(&self) -> bool {
        let mut did = false;
        loop {
            let task = self.tasks.lock().pop_front();
            match task {
                Some(task) => {
                    task();
                    did = true;
                }
                None => return did,
            }
        }
    }

    /// Calls every handler's `tick`.
    pub fn tick_all(self: &Arc<Self>) {
        let handlers: Vec<Arc<dyn EventHandler>> = self
            .handlers
            .read()
            .iter()
            .map(|(_, h)| h.clone())
            .collect();
        for h in handlers {
            h.tick(self);
        }
    }
}
