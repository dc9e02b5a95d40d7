//! A small SOCKS5 server (RFC 1928): no authentication, `CONNECT` only, with the
//! destination name resolved by the proxy (what `socks5h://` clients send).

use crate::client::ClientConn;
use crate::decide::open_upstream;
use crate::log::{Decision, Protocol, Reason};
use crate::pattern::Target;
use crate::server::ContextState;
use crate::tunnel::inspect_and_splice;
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWrite, AsyncWriteExt};

const VERSION: u8 = 5;
const NO_AUTH: u8 = 0;
const NO_ACCEPTABLE_METHOD: u8 = 0xff;
const CMD_CONNECT: u8 = 1;

/// RFC 1928 reply codes.
mod reply {
    pub const SUCCEEDED: u8 = 0;
    pub const GENERAL_FAILURE: u8 = 1;
    pub const NOT_ALLOWED: u8 = 2;
    pub const HOST_UNREACHABLE: u8 = 4;
    pub const CONNECTION_REFUSED: u8 = 5;
    pub const COMMAND_NOT_SUPPORTED: u8 = 7;
    pub const ADDRESS_NOT_SUPPORTED: u8 = 8;
}

async fn send_reply<S: AsyncWrite + Unpin>(s: &mut S, code: u8) -> io::Result<()> {
    // The bound address is not meaningful through a relay; clients ignore it.
    s.write_all(&[VERSION, code, 0, 1, 0, 0, 0, 0, 0, 0])
        .await?;
    s.flush().await
}

/// Serve one SOCKS5 connection whose first byte (the version, 5) was already read.
pub async fn serve(state: Arc<ContextState>, mut client: ClientConn) -> io::Result<()> {
    let n_methods = client.read_u8().await? as usize;
    let mut methods = vec![0u8; n_methods];
    client.read_exact(&mut methods).await?;
    if !methods.contains(&NO_AUTH) {
        client.write_all(&[VERSION, NO_ACCEPTABLE_METHOD]).await?;
        return Ok(());
    }
    client.write_all(&[VERSION, NO_AUTH]).await?;

    let mut head = [0u8; 4];
    client.read_exact(&mut head).await?;
    if head[0] != VERSION {
        return Ok(());
    }
    let host = match head[3] {
        1 => {
            let mut a = [0u8; 4];
            client.read_exact(&mut a).await?;
            Ipv4Addr::from(a).to_string()
        }
        3 => {
            let len = client.read_u8().await? as usize;
            let mut name = vec![0u8; len];
            client.read_exact(&mut name).await?;
            String::from_utf8_lossy(&name).into_owned()
        }
        4 => {
            let mut a = [0u8; 16];
            client.read_exact(&mut a).await?;
            Ipv6Addr::from(a).to_string()
        }
        _ => {
            log_bad(&state, "", 0, "SOCKS address type not supported");
            return send_reply(&mut client, reply::ADDRESS_NOT_SUPPORTED).await;
        }
    };
    let port = client.read_u16().await?;
    if head[1] != CMD_CONNECT {
        log_bad(
            &state,
            &host,
            port,
            &format!("SOCKS command {} not supported (CONNECT only)", head[1]),
        );
        return send_reply(&mut client, reply::COMMAND_NOT_SUPPORTED).await;
    }
    let Some(target) = Target::new(&host, port) else {
        log_bad(&state, &host, port, "not a valid host name");
        return send_reply(&mut client, reply::NOT_ALLOWED).await;
    };
    let upstream = match open_upstream(&state.config, &state.log, Protocol::Socks5, &target).await {
        Ok(u) => u,
        Err(refusal) => {
            let code = match (refusal.decision, refusal.reason) {
                (Decision::Refused, _) => reply::NOT_ALLOWED,
                (_, Reason::DnsFailed) => reply::HOST_UNREACHABLE,
                (_, Reason::ConnectFailed) => reply::CONNECTION_REFUSED,
                _ => reply::GENERAL_FAILURE,
            };
            return send_reply(&mut client, code).await;
        }
    };
    send_reply(&mut client, reply::SUCCEEDED).await?;
    inspect_and_splice(
        client,
        Vec::new(),
        upstream.stream,
        &target.host,
        upstream.entry,
        state.config.first_bytes_timeout,
    )
    .await
}

fn log_bad(state: &ContextState, host: &str, port: u16, detail: &str) {
    state
        .log
        .refuse_bad_request(Protocol::Socks5, host, port, detail);
}
