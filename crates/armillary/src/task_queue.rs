//! A place to run small pieces of work later on one of the ORB's own
//! threads: what an asynchronous servant (AMH) needs to go on when an
//! event it waits for happens, without an executor and without a thread
//! of its own. The server's reactor is one (its threads, or the
//! application's threads driving it, run what is queued in turn).

/// One piece of queued work.
pub(crate) type Task = Box<dyn FnOnce() + Send>;

/// Runs tasks later on the ORB's threads.
pub(crate) trait TaskQueue: Send + Sync {
    /// Queues `task`; it runs once, on a thread of the queue's, unless the
    /// queue has stopped: then `task` is dropped (now or when the queue is
    /// cleared), never run.
    fn run_later(&self, task: Task);
}
