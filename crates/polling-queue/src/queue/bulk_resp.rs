//! The initializer's bulk `ZADD NX` as pre-encoded RESP on a connection of its own, the way
//! `redis-cli --pipe` loads a protocol file: the commands are written as bytes straight from
//! the (score, card) pairs, streamed while a reader counts the replies. Through fred every
//! member costs a `Value`, a protocol frame and two length computations; here it costs a few
//! digit writes, which is what the load's client time was.
//!
//! Only for a single Redis server (`ServerConfig::Centralized`; fred is built without TLS):
//! on a Redis Cluster or behind Sentinel the initializer keeps fred's routed pipelines. The
//! connection authenticates and selects the database as fred's would; connect, each write and
//! each reply have a deadline, and any error fails the page (the initializer's run fails and
//! is re-run: `ZADD NX` makes a re-run repair, never move, what is there).

use fred::error::{Error, ErrorKind};
use fred::prelude::*;
use fred::types::config::ServerConfig;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// How long connecting (and authenticating) may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one write or one reply may take: far above a healthy Redis under a bulk load.
const IO_TIMEOUT: Duration = Duration::from_secs(60);
/// Bytes encoded before they are written.
const WRITE_CHUNK: usize = 1 << 20;

/// Where and how to connect: the pool's own server and credentials.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    host: String,
    port: u16,
    username: Option<String>,
    password: Option<String>,
    database: Option<u8>,
}

impl Target {
    /// The target of `config`, if it names one single server.
    pub(crate) fn of(config: &Config) -> Option<Target> {
        match &config.server {
            ServerConfig::Centralized { server } => Some(Target {
                host: server.host.to_string(),
                port: server.port,
                username: config.username.clone(),
                password: config.password.clone(),
                database: config.database,
            }),
            _ => None,
        }
    }
}

/// One `ZADD key NX score member ...` command, as its key and its (score, member) pairs.
pub(crate) struct Command<'a> {
    pub(crate) key: &'a [u8],
    pub(crate) pairs: &'a [(i64, i64)],
}

/// Sends `commands` over one new connection to `target` and returns the sum of their replies
/// (members that were new).
pub(crate) async fn zadd_nx(target: &Target, commands: &[Command<'_>]) -> Result<u64, Error> {
    if commands.is_empty() {
        return Ok(0);
    }
    let stream = connect(target).await?;
    let (read, mut write) = stream.into_split();
    let mut replies = BufReader::new(read);
    let writer = async {
        let mut buf = Vec::with_capacity(WRITE_CHUNK + 64 * 1024);
        for command in commands {
            encode(&mut buf, command);
            if buf.len() >= WRITE_CHUNK {
                deadline(write.write_all(&buf)).await?;
                buf.clear();
            }
        }
        deadline(write.write_all(&buf)).await?;
        deadline(write.flush()).await?;
        Ok::<(), Error>(())
    };
    let reader = async {
        let mut added = 0u64;
        let mut line = Vec::with_capacity(64);
        for _ in commands {
            added += integer_reply(&mut replies, &mut line).await?.max(0) as u64;
        }
        Ok::<u64, Error>(added)
    };
    let ((), added) = tokio::try_join!(writer, reader)?;
    Ok(added)
}

async fn connect(target: &Target) -> Result<TcpStream, Error> {
    let connecting = TcpStream::connect((target.host.as_str(), target.port));
    let stream = tokio::time::timeout(CONNECT_TIMEOUT, connecting)
        .await
        .map_err(|_| io_error("connect timed out"))?
        .map_err(|e| io_error(&format!("connect: {e}")))?;
    stream
        .set_nodelay(true)
        .map_err(|e| io_error(&format!("set TCP_NODELAY: {e}")))?;
    let mut setup: Vec<Vec<&[u8]>> = Vec::new();
    if let Some(password) = &target.password {
        let mut auth: Vec<&[u8]> = vec![b"AUTH"];
        if let Some(user) = &target.username {
            auth.push(user.as_bytes());
        }
        auth.push(password.as_bytes());
        setup.push(auth);
    }
    let db = target.database.map(|d| d.to_string());
    if let Some(db) = &db {
        setup.push(vec![b"SELECT", db.as_bytes()]);
    }
    if setup.is_empty() {
        return Ok(stream);
    }
    let mut stream = BufReader::new(stream);
    let mut buf = Vec::new();
    for args in &setup {
        array_header(&mut buf, args.len());
        for arg in args {
            bulk(&mut buf, arg);
        }
    }
    let handshake = async {
        stream.get_mut().write_all(&buf).await?;
        let mut line = Vec::new();
        for _ in &setup {
            line.clear();
            stream.read_until(b'\n', &mut line).await?;
            if !line.starts_with(b"+OK") {
                return Ok(Err(String::from_utf8_lossy(&line).trim_end().to_owned()));
            }
        }
        Ok::<_, std::io::Error>(Ok(()))
    };
    match tokio::time::timeout(CONNECT_TIMEOUT, handshake).await {
        Err(_) => Err(io_error("AUTH/SELECT timed out")),
        Ok(Err(e)) => Err(io_error(&format!("AUTH/SELECT: {e}"))),
        Ok(Ok(Err(refused))) => Err(Error::new(
            ErrorKind::Auth,
            format!("AUTH/SELECT refused: {refused}"),
        )),
        Ok(Ok(Ok(()))) => Ok(stream.into_inner()),
    }
}

async fn deadline<T>(
    io: impl std::future::Future<Output = std::io::Result<T>>,
) -> Result<T, Error> {
    tokio::time::timeout(IO_TIMEOUT, io)
        .await
        .map_err(|_| io_error("write timed out"))?
        .map_err(|e| io_error(&format!("write: {e}")))
}

/// Reads one reply; an integer (`:n`) is the answer, an error reply (`-ERR ...`) fails.
async fn integer_reply(
    replies: &mut BufReader<tokio::net::tcp::OwnedReadHalf>,
    line: &mut Vec<u8>,
) -> Result<i64, Error> {
    line.clear();
    let n = tokio::time::timeout(IO_TIMEOUT, replies.read_until(b'\n', line))
        .await
        .map_err(|_| io_error("reply timed out"))?
        .map_err(|e| io_error(&format!("read: {e}")))?;
    if n == 0 {
        return Err(io_error("connection closed before every reply"));
    }
    parse_integer_reply(line)
}

fn parse_integer_reply(line: &[u8]) -> Result<i64, Error> {
    let text = std::str::from_utf8(line).unwrap_or_default().trim_end();
    match text.strip_prefix(':').map(str::parse::<i64>) {
        Some(Ok(n)) => Ok(n),
        _ => Err(Error::new(
            ErrorKind::Unknown,
            format!("ZADD NX answered `{text}`"),
        )),
    }
}

fn io_error(detail: &str) -> Error {
    Error::new(ErrorKind::IO, format!("bulk ZADD connection: {detail}"))
}

/// Appends `ZADD key NX score member ...` to `out`.
pub(crate) fn encode(out: &mut Vec<u8>, command: &Command<'_>) {
    array_header(out, 3 + 2 * command.pairs.len());
    out.extend_from_slice(b"$4\r\nZADD\r\n");
    bulk(out, command.key);
    out.extend_from_slice(b"$2\r\nNX\r\n");
    for (score, member) in command.pairs {
        bulk_integer(out, *score);
        bulk_integer(out, *member);
    }
}

fn array_header(out: &mut Vec<u8>, len: usize) {
    out.push(b'*');
    digits(out, len as u64);
    out.extend_from_slice(b"\r\n");
}

fn bulk(out: &mut Vec<u8>, data: &[u8]) {
    out.push(b'$');
    digits(out, data.len() as u64);
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
}

/// An integer as a bulk string of its decimal digits (how Redis takes numbers).
fn bulk_integer(out: &mut Vec<u8>, value: i64) {
    let mut text = [0u8; 20];
    let start = decimal(&mut text, value.unsigned_abs());
    let negative = usize::from(value < 0);
    out.push(b'$');
    digits(out, (text.len() - start + negative) as u64);
    out.extend_from_slice(b"\r\n");
    if negative == 1 {
        out.push(b'-');
    }
    out.extend_from_slice(&text[start..]);
    out.extend_from_slice(b"\r\n");
}

fn digits(out: &mut Vec<u8>, value: u64) {
    let mut text = [0u8; 20];
    let start = decimal(&mut text, value);
    out.extend_from_slice(&text[start..]);
}

/// Writes `value` in decimal at the end of `text`; returns where it starts.
pub(crate) fn decimal(text: &mut [u8; 20], mut value: u64) -> usize {
    let mut at = text.len();
    loop {
        at -= 1;
        text[at] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            return at;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_what_redis_cli_would_send() {
        let mut out = Vec::new();
        encode(
            &mut out,
            &Command {
                key: b"q",
                pairs: &[(1_767_225_600, 7), (-5, 1_000)],
            },
        );
        assert_eq!(
            String::from_utf8(out).ok().as_deref(),
            Some(
                "*7\r\n$4\r\nZADD\r\n$1\r\nq\r\n$2\r\nNX\r\n$10\r\n1767225600\r\n$1\r\n7\r\n$2\r\n-5\r\n$4\r\n1000\r\n"
            )
        );
    }

    #[test]
    fn integer_replies_parse_and_errors_fail() {
        assert_eq!(parse_integer_reply(b":42\r\n").ok(), Some(42));
        assert!(parse_integer_reply(b"-WRONGTYPE no\r\n").is_err());
        assert!(parse_integer_reply(b"+OK\r\n").is_err());
    }
}
