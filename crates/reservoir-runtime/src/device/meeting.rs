//! The ranks of a launch meet before NCCL can join them: rank 0 listens at the launch's
//! address and hands a payload (NCCL's 128-byte unique id) to every other rank, over plain
//! TCP.
//!
//! Rank 0 serves each connection on a thread of its own with a short deadline, so a
//! connection that sends nothing delays no rank, and it gives a rank's slot only to a
//! connection that sends the protocol's magic, this job's token and world size and a rank
//! not yet seen; it closes any other without failing the meeting (answering those that
//! speak the protocol with the reason, so a misplaced rank fails at once, saying why).
//!
//! A rank says `MAGIC`, its rank and world size (u32, little-endian), the length of its
//! token (u16) and the token; rank 0 answers `MAGIC`, a status byte ([`WELCOME`] or
//! [`REFUSED`]), a length (u32) and the payload or the reason.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use super::launch::Launch;
use crate::error::{Result, RuntimeError};

/// The bytes that open every message, so another service's connection is told apart.
const MAGIC: &[u8; 8] = b"RESMEET1";
/// Rank 0's answer: the payload follows.
const WELCOME: u8 = 0;
/// Rank 0's answer: this connection has no slot; the reason follows.
const REFUSED: u8 = 1;
/// The longest answer a rank reads.
const MAX_ANSWER_BYTES: u32 = 1 << 20;
/// How long rank 0 waits for a connection to say who it is, and for a write to go out.
const HELLO_TIMEOUT: Duration = Duration::from_secs(5);
/// The most connections rank 0 reads at once; any beyond are closed (a real rank retries).
const MAX_PENDING: usize = 256;
/// How often rank 0 looks for new connections.
const POLL: Duration = Duration::from_millis(10);
/// How long a rank waits before it tries to reach rank 0 again.
const RETRY: Duration = Duration::from_millis(100);
/// The longest a rank waits for one connection to rank 0 to open.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

impl Launch {
    /// Meets the other ranks: rank 0 makes the payload with `make` and hands it to every
    /// other rank; every rank returns it. Each rank gives up after the launch's timeout.
    ///
    /// # Errors
    /// [`RuntimeError::Meeting`] naming the address: rank 0 cannot listen there (in use, not
    /// an address of this host), a rank missing when the time is up, a rank refused by rank 0
    /// (another token or world size, a rank twice); any error of `make`.
    pub fn meet(&self, make: impl FnOnce() -> Result<Vec<u8>>) -> Result<Vec<u8>> {
        if self.rank == 0 {
            let payload = make()?;
            let listener = self.listen()?;
            self.serve(&listener, &payload)?;
            Ok(payload)
        } else {
            self.join(&self.hello()?)
        }
    }

    /// The error of this meeting, for `reason`.
    fn failed(&self, reason: String) -> RuntimeError {
        RuntimeError::Meeting {
            address: self.address.clone(),
            reason,
        }
    }

    /// What this rank says to rank 0.
    fn hello(&self) -> Result<Vec<u8>> {
        let number = |value: usize| {
            u32::try_from(value).map_err(|_| self.failed(format!("{value} ranks are too many")))
        };
        let token = u16::try_from(self.token.len())
            .map_err(|_| self.failed("the token is too long".to_string()))?;
        let mut hello = MAGIC.to_vec();
        hello.extend(number(self.rank)?.to_le_bytes());
        hello.extend(number(self.world)?.to_le_bytes());
        hello.extend(token.to_le_bytes());
        hello.extend(self.token.as_bytes());
        Ok(hello)
    }

    /// Rank 0's listener, on the meeting address only.
    fn listen(&self) -> Result<TcpListener> {
        let at = resolve(&self.address).map_err(|e| {
            self.failed(format!(
                "rank 0 cannot resolve the address: {e}; set RESERVOIR_MEET_ADDR to this host's \
                 name or address"
            ))
        })?;
        let listener = TcpListener::bind(at).map_err(|e| {
            let advice = match e.kind() {
                io::ErrorKind::AddrInUse => {
                    "another process listens there; set RESERVOIR_MEET_PORT to a free port"
                }
                io::ErrorKind::AddrNotAvailable => {
                    "it is not an address of this host, where rank 0 runs; set \
                     RESERVOIR_MEET_ADDR to rank 0's host"
                }
                _ => {
                    "set RESERVOIR_MEET_ADDR and RESERVOIR_MEET_PORT to an address of this \
                      host and a free port"
                }
            };
            self.failed(format!("rank 0 cannot listen on {at}: {e}; {advice}"))
        })?;
        listener
            .set_nonblocking(true)
            .map_err(|e| self.failed(format!("rank 0 cannot poll its listener: {e}")))?;
        Ok(listener)
    }

    /// Rank 0: hands `payload` to each rank that says this job's token and world size, until
    /// every rank has it or the time is up.
    fn serve(&self, listener: &TcpListener, payload: &[u8]) -> Result<()> {
        let deadline = Instant::now() + self.timeout;
        let (told, hellos) = mpsc::channel();
        let mut met = vec![false; self.world];
        met[0] = true;
        let mut pending = 0;
        while met.contains(&false) {
            if Instant::now() >= deadline {
                let missing: Vec<String> = (0..self.world)
                    .filter(|&rank| !met[rank])
                    .map(|rank| rank.to_string())
                    .collect();
                return Err(self.failed(format!(
                    "rank 0 waited {:.0} s, but ranks {} of {} did not come \
                     (RESERVOIR_MEET_TIMEOUT sets the wait)",
                    self.timeout.as_secs_f64(),
                    missing.join(", "),
                    self.world
                )));
            }
            loop {
                match listener.accept() {
                    Ok((stream, _)) if pending < MAX_PENDING => {
                        let told = told.clone();
                        let (token, world) = (self.token.clone(), self.world);
                        let reader = thread::Builder::new().spawn(move || {
                            let mut stream = stream;
                            let said = read_hello(&mut stream, token.as_bytes(), world);
                            // Rank 0 stops listening once every rank has met.
                            let _ = told.send((stream, said));
                        });
                        pending += usize::from(reader.is_ok());
                    }
                    // Too many at once: closed, and a real rank tries again.
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if is_transient(&e) => {}
                    Err(e) => return Err(self.failed(format!("rank 0 cannot accept: {e}"))),
                }
            }
            let Ok((mut stream, said)) = hellos.recv_timeout(POLL) else {
                continue;
            };
            pending -= 1;
            let reason = match said {
                Said::Rank(rank) if !met[rank] => {
                    if answer(&mut stream, WELCOME, payload).is_ok() {
                        met[rank] = true;
                    }
                    continue;
                }
                Said::Rank(rank) => format!(
                    "rank {rank} has already met rank 0: two processes of this job have rank \
                     {rank}"
                ),
                Said::Refused(reason) => reason,
                Said::Nothing => continue,
            };
            // The refused connection is closed whether or not the answer reaches it.
            let _ = answer(&mut stream, REFUSED, reason.as_bytes());
        }
        Ok(())
    }

    /// A rank other than 0: connects to rank 0 until it answers or the time is up.
    fn join(&self, hello: &[u8]) -> Result<Vec<u8>> {
        let deadline = Instant::now() + self.timeout;
        loop {
            let last = match self.ask(hello, deadline) {
                Ok(Ok(payload)) => return Ok(payload),
                Ok(Err(reason)) => {
                    return Err(self.failed(format!("rank 0 refused rank {}: {reason}", self.rank)))
                }
                Err(e) => e,
            };
            if Instant::now() + RETRY >= deadline {
                return Err(self.failed(format!(
                    "rank {} of {} found no rank 0 there within {:.0} s ({last}); rank 0 \
                     listens there once it starts (RESERVOIR_MEET_TIMEOUT sets the wait)",
                    self.rank,
                    self.world,
                    self.timeout.as_secs_f64()
                )));
            }
            thread::sleep(RETRY);
        }
    }

    /// One attempt of [`Launch::join`]: rank 0's payload, or the reason it refused this rank.
    fn ask(
        &self,
        hello: &[u8],
        deadline: Instant,
    ) -> io::Result<std::result::Result<Vec<u8>, String>> {
        let at = resolve(&self.address)?;
        let left = deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(1));
        let mut stream = TcpStream::connect_timeout(&at, left.min(CONNECT_TIMEOUT))?;
        // A connection to a port of this host that nobody listens on yet can get that very
        // port as its own (TCP's simultaneous open) and connect to itself, which would also
        // keep rank 0 from listening there: drop it and try again.
        if stream.local_addr()? == stream.peer_addr()? {
            return Err(io::Error::other("connected to itself"));
        }
        stream.set_read_timeout(Some(left))?;
        stream.write_all(hello)?;
        let (mut magic, mut status, mut length) = ([0u8; MAGIC.len()], [0u8; 1], [0u8; 4]);
        for field in [&mut magic[..], &mut status[..], &mut length[..]] {
            stream.read_exact(field)?;
        }
        let length = u32::from_le_bytes(length);
        if magic != *MAGIC || length > MAX_ANSWER_BYTES {
            return Err(io::Error::other("something other than rank 0 answered"));
        }
        let mut body = vec![0u8; length as usize];
        stream.read_exact(&mut body)?;
        Ok(match status[0] {
            WELCOME => Ok(body),
            _ => Err(String::from_utf8_lossy(&body).into_owned()),
        })
    }
}

/// What a connection said to rank 0.
enum Said {
    /// A rank of this job.
    Rank(usize),
    /// Something that speaks the protocol but is not a rank of this job, and why.
    Refused(String),
    /// Nothing, too little or not the protocol.
    Nothing,
}

/// Reads a connection's hello within [`HELLO_TIMEOUT`], to be a rank of the job of `token`
/// and `world` ranks.
fn read_hello(stream: &mut TcpStream, token: &[u8], world: usize) -> Said {
    let mut read = || -> io::Result<Said> {
        // An accepted connection may inherit the listener's non-blocking mode.
        stream.set_nonblocking(false)?;
        stream.set_read_timeout(Some(HELLO_TIMEOUT))?;
        let (mut magic, mut rank, mut theirs, mut length) =
            ([0u8; MAGIC.len()], [0u8; 4], [0u8; 4], [0u8; 2]);
        stream.read_exact(&mut magic)?;
        if magic != *MAGIC {
            return Ok(Said::Nothing);
        }
        for field in [&mut rank[..], &mut theirs[..], &mut length[..]] {
            stream.read_exact(field)?;
        }
        let mut said = vec![0u8; usize::from(u16::from_le_bytes(length))];
        stream.read_exact(&mut said)?;
        let (rank, theirs) = (u32::from_le_bytes(rank), u32::from_le_bytes(theirs));
        if said != token {
            return Ok(Said::Refused(
                "this rank's token is not rank 0's: it is a process of another job".to_string(),
            ));
        }
        if usize::try_from(theirs).ok() != Some(world) {
            return Ok(Said::Refused(format!(
                "the world size is {world} there and {theirs} here"
            )));
        }
        Ok(match usize::try_from(rank) {
            Ok(rank) if rank > 0 && rank < world => Said::Rank(rank),
            _ => Said::Refused(format!("rank {rank} is not one of 1 to {}", world - 1)),
        })
    };
    read().unwrap_or(Said::Nothing)
}

/// Rank 0's answer: `status` and `body`, within [`HELLO_TIMEOUT`].
fn answer(stream: &mut TcpStream, status: u8, body: &[u8]) -> io::Result<()> {
    let length = u32::try_from(body.len()).map_err(io::Error::other)?;
    stream.set_write_timeout(Some(HELLO_TIMEOUT))?;
    let message = [MAGIC.as_slice(), &[status], &length.to_le_bytes(), body].concat();
    stream.write_all(&message)
}

/// An error of `accept` that concerns one connection only (the listener still works).
fn is_transient(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::Interrupted
            | io::ErrorKind::TimedOut
    )
}

/// The socket address `address` (`host:port`) names: its first IPv4 address, else its first,
/// the same rule on every rank so they agree on one.
fn resolve(address: &str) -> io::Result<SocketAddr> {
    let all: Vec<SocketAddr> = address.to_socket_addrs()?.collect();
    all.iter()
        .find(|at| at.is_ipv4())
        .or_else(|| all.first())
        .copied()
        .ok_or_else(|| io::Error::other("the host name resolves to no address"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::Launcher;

    /// A port nobody listens on now.
    fn free_port() -> u16 {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a port");
        listener.local_addr().expect("its address").port()
    }

    fn rank(rank: usize, world: usize, address: &str) -> Launch {
        Launch {
            launcher: Launcher::Torchrun,
            rank,
            world,
            local_rank: rank,
            address: address.to_string(),
            token: "job-1".to_string(),
            timeout: Duration::from_secs(20),
        }
    }

    /// `launch` meeting the others on a thread of its own, rank 0 handing out `b"id"`.
    fn spawn(launch: Launch) -> thread::JoinHandle<Result<Vec<u8>>> {
        thread::spawn(move || launch.meet(|| Ok(b"id".to_vec())))
    }

    /// Waits until rank 0 listens at `address`; the connection made to find out stays open
    /// and silent until the meeting is over.
    fn listening(address: &str) -> TcpStream {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match TcpStream::connect(address) {
                Ok(stream) => return stream,
                Err(e) if Instant::now() > deadline => panic!("rank 0 never listened: {e}"),
                Err(_) => thread::sleep(Duration::from_millis(10)),
            }
        }
    }

    #[test]
    fn every_rank_gets_rank_0s_payload_whoever_starts_first() {
        let address = format!("localhost:{}", free_port());
        let others: Vec<_> = (1..4).map(|r| spawn(rank(r, 4, &address))).collect();
        thread::sleep(Duration::from_millis(300));
        let first = spawn(rank(0, 4, &address));
        for handle in std::iter::once(first).chain(others) {
            assert_eq!(handle.join().expect("thread").expect("met"), b"id");
        }
    }

    #[test]
    fn strays_take_no_slot_and_a_silent_one_delays_nobody() {
        let address = format!("127.0.0.1:{}", free_port());
        let zero = spawn(rank(0, 3, &address));
        let silent = listening(&address);
        let started = Instant::now();
        let mut garbage = TcpStream::connect(&address).expect("garbage");
        garbage.write_all(b"GET / HTTP/1.1\r\n\r\n").expect("sent");
        // Another job's rank 1 and a rank 1 of another world size are refused at once.
        let stranger = Launch {
            token: "job-2".to_string(),
            ..rank(1, 3, &address)
        };
        let message = stranger
            .meet(|| Ok(Vec::new()))
            .expect_err("another job")
            .to_string();
        assert!(
            message.contains("token") && message.contains(&address),
            "{message}"
        );
        let message = rank(1, 4, &address)
            .meet(|| Ok(Vec::new()))
            .expect_err("world")
            .to_string();
        assert!(
            message.contains("world size is 3 there and 4 here"),
            "{message}"
        );
        // The real ranks still meet, long before the silent connection's deadline.
        let ones = [spawn(rank(1, 3, &address)), spawn(rank(2, 3, &address))];
        for handle in ones.into_iter().chain([zero]) {
            assert_eq!(handle.join().expect("thread").expect("met"), b"id");
        }
        assert!(
            started.elapsed() < HELLO_TIMEOUT / 2,
            "{:?}",
            started.elapsed()
        );
        drop(silent);
    }

    #[test]
    fn a_rank_twice_is_refused_without_failing_the_meeting() {
        let address = format!("127.0.0.1:{}", free_port());
        let zero = spawn(rank(0, 3, &address));
        let first = rank(1, 3, &address)
            .meet(|| Ok(Vec::new()))
            .expect("rank 1");
        assert_eq!(first, b"id");
        let message = rank(1, 3, &address)
            .meet(|| Ok(Vec::new()))
            .expect_err("twice")
            .to_string();
        assert!(message.contains("rank 1 has already met"), "{message}");
        assert_eq!(
            rank(2, 3, &address)
                .meet(|| Ok(Vec::new()))
                .expect("rank 2"),
            b"id"
        );
        assert_eq!(zero.join().expect("thread").expect("rank 0"), b"id");
    }

    #[test]
    fn a_rank_without_rank_0_gives_up_in_time_naming_the_address() {
        let address = format!("127.0.0.1:{}", free_port());
        let alone = Launch {
            timeout: Duration::from_millis(500),
            ..rank(1, 2, &address)
        };
        let started = Instant::now();
        let message = alone
            .meet(|| Ok(Vec::new()))
            .expect_err("nobody")
            .to_string();
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{:?}",
            started.elapsed()
        );
        assert!(
            message.contains(&address) && message.contains("rank 1 of 2"),
            "{message}"
        );
        let zero = Launch {
            timeout: Duration::from_millis(300),
            ..rank(0, 3, &address)
        };
        let message = zero
            .meet(|| Ok(Vec::new()))
            .expect_err("nobody")
            .to_string();
        assert!(message.contains("ranks 1, 2 of 3"), "{message}");
    }

    #[test]
    fn rank_0_listens_on_the_meeting_address_only() {
        let port = free_port();
        let address = format!("127.0.0.1:{port}");
        let zero = spawn(rank(0, 2, &address));
        let probe = listening(&address);
        // Every 127.x.y.z reaches this host; a listener on all addresses would answer here.
        let other = TcpStream::connect(("127.0.0.2", port));
        assert!(other.is_err(), "rank 0 also listens on 127.0.0.2");
        assert_eq!(
            rank(1, 2, &address).meet(|| Ok(Vec::new())).expect("met"),
            b"id"
        );
        zero.join().expect("thread").expect("rank 0");
        drop(probe);
        // An address of another host, or one in use, is refused naming what to set.
        let elsewhere = format!("192.0.2.1:{port}");
        let message = Launch {
            timeout: Duration::from_secs(1),
            ..rank(0, 2, &elsewhere)
        }
        .meet(|| Ok(Vec::new()))
        .expect_err("elsewhere")
        .to_string();
        assert!(
            message.contains(&elsewhere) && message.contains("RESERVOIR_MEET_ADDR"),
            "{message}"
        );
        let taken = TcpListener::bind("127.0.0.1:0").expect("a port");
        let busy = taken.local_addr().expect("address").to_string();
        let message = rank(0, 2, &busy)
            .meet(|| Ok(Vec::new()))
            .expect_err("in use")
            .to_string();
        assert!(
            message.contains(&busy) && message.contains("RESERVOIR_MEET_PORT"),
            "{message}"
        );
    }
}
