//! The one error type. Every error is a complete, one-line message for the user; all of them
//! exit with code 2 (usage or setup), as opposed to 1 (the answer is "no": wrong data).

/// Set once this process has begun ending the job with an outcome of its own (an error line
/// printed, the table and verdict out): a SIGINT or SIGTERM after that is the launcher tearing
/// the job down on another rank's exit, not an interruption to report
/// (`report::interrupted`). An atomic load is safe in a signal handler.
pub static ENDING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Mark this process as ending the job with an outcome of its own ([`ENDING`]), and say so to
/// the ranks that watch this one (`watchdog::liveness`), so its end is not taken for a death.
pub fn ending() {
    ENDING.store(true, std::sync::atomic::Ordering::SeqCst);
    // Its own flag: ENDING may already be set by a peer's word (`watchdog::liveness`: another
    // rank ends the job), and this process must still say its end is not a death.
    if !SAID_OWN.swap(true, std::sync::atomic::Ordering::SeqCst) {
        tell_on_ending_byte(BYE_OWN);
    }
}

/// Whether this process has said [`BYE_OWN`] to its watchers.
static SAID_OWN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The byte a process ending the job with an outcome of its own sends its watchers.
pub const BYE_OWN: u8 = b'O';
/// The byte a process ending on SIGINT/SIGTERM sends its watchers.
pub const BYE_SIGNALLED: u8 = b'S';

/// The sockets of the ranks that watch this one (`watchdog::liveness`): a leaked list, so a
/// signal handler can read it.
static WATCHERS: std::sync::atomic::AtomicPtr<Vec<i32>> = std::sync::atomic::AtomicPtr::new(std::ptr::null_mut());

/// Who to tell when this process ends: these sockets (empty: nobody). The previous list is
/// leaked on purpose (a handler running now may read it).
pub fn tell_on_ending(fds: Vec<i32>) {
    WATCHERS.store(Box::into_raw(Box::new(fds)), std::sync::atomic::Ordering::SeqCst);
}

/// One byte to every watcher. Async-signal-safe (an atomic load and write(2)s).
pub fn tell_on_ending_byte(byte: u8) {
    let list = WATCHERS.load(std::sync::atomic::Ordering::SeqCst);
    if list.is_null() {
        return;
    }
    // SAFETY: WATCHERS holds a leaked, never freed list; write(2) of one live byte.
    unsafe {
        for &fd in (*list).iter() {
            libc::write(fd, [byte].as_ptr().cast(), 1);
        }
    }
}

/// A usage or setup error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A flag or argument was wrong; the message names it and the accepted form.
    #[error("{0}")]
    Usage(String),
    /// The machine, the launcher, MPI or a file would not let the run go ahead.
    #[error("{0}")]
    Setup(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn usage(msg: impl Into<String>) -> Self {
        Error::Usage(msg.into())
    }
    pub fn setup(msg: impl Into<String>) -> Self {
        Error::Setup(msg.into())
    }
}

/// Exit codes: 0 ok, 1 wrong data or a failed verdict, 2 usage or setup error.
pub mod exit {
    pub const OK: i32 = 0;
    pub const WRONG: i32 = 1;
    pub const ERROR: i32 = 2;
    /// `check`: no rule failed, but some check could not be judged (NOISY: the machine changed
    /// speed under its measurement).
    pub const NOISY: i32 = 3;
}

/// A path as every message and output line quotes it: control characters (a newline, a tab, an
/// escape) written as `\n`, `\t`, `\u{1b}`, so a file name can never split a message or forge an
/// output line; anything else as `Path::display` shows it.
pub fn shown(path: impl AsRef<std::path::Path>) -> String {
    let text = path.as_ref().to_string_lossy();
    if !text.chars().any(char::is_control) {
        return text.into_owned();
    }
    text.chars().map(|c| if c.is_control() { c.escape_default().to_string() } else { c.to_string() }).collect()
}

/// Clap's error as one line: its first paragraph (the message, and the values or arguments it
/// lists), without `error: `, the usage block or the tips. The one place a clap error becomes
/// our one line; the caller adds where to look (`--help`, the accepted form).
pub fn clap_message(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let lines: Vec<&str> = text
        .lines()
        .take_while(|l| !l.trim().is_empty() && !l.starts_with("Usage:"))
        .map(|l| l.trim().trim_start_matches("error: "))
        .collect();
    let msg = lines.join(" ").trim_end_matches(':').to_string();
    if msg.is_empty() {
        "bad command line".to_string()
    } else {
        msg
    }
}

#[cfg(test)]
mod tests {
    /// A rank whose links thread has already heard a peer end the job (ENDING set) must still
    /// say its own end is not a death, or the peer, still printing its line, names it "killed
    /// or crashed" (seen in a fresh-machine run: `nccl::an_asynchronous_nccl_error_mid_run_ends_the_job`).
    #[test]
    fn a_process_says_its_own_end_even_after_a_peers_word() {
        let mut fds = [0; 2];
        // SAFETY: socketpair(2) fills two descriptors.
        assert_eq!(unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM, 0, fds.as_mut_ptr()) }, 0);
        super::tell_on_ending(vec![fds[0]]);
        super::ENDING.store(true, std::sync::atomic::Ordering::SeqCst);
        super::ending();
        super::tell_on_ending(vec![]);
        let mut b = [0u8; 4];
        // SAFETY: a non-blocking read into a live buffer of that length.
        let k = unsafe { libc::recv(fds[1], b.as_mut_ptr().cast(), b.len(), libc::MSG_DONTWAIT) };
        assert_eq!(k, 1, "no word said");
        assert_eq!(b[0], super::BYE_OWN);
        // SAFETY: our two descriptors, closed once.
        unsafe {
            libc::close(fds[0]);
            libc::close(fds[1]);
        }
    }

    #[test]
    fn a_path_is_shown_on_one_line() {
        assert_eq!(super::shown("/tmp/a b/run.csv"), "/tmp/a b/run.csv");
        assert_eq!(
            super::shown("x\n# Wrote /etc/passwd (CSV)\ty\u{1b}[2J.csv"),
            "x\\n# Wrote /etc/passwd (CSV)\\ty\\u{1b}[2J.csv"
        );
    }
}
