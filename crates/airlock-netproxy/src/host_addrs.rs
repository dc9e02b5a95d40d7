//! The addresses assigned to this host's interfaces, as the kernel has them now.
//!
//! The proxy refuses any of them as a destination, whatever range it is in: a
//! name that resolves to a public address on one of the host's own interfaces
//! would otherwise reach services bound on 0.0.0.0 (finding 4 of issue 13). The
//! list is read afresh for every decision with one rtnetlink `RTM_GETADDR` dump
//! (tens of microseconds), so an address added a moment ago counts at once.
//! If it cannot be read, the decision fails closed.

use rustix::net::{netlink, AddressFamily, RecvFlags, SendFlags, SocketFlags, SocketType};
use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

const NLMSG_HDR: usize = 16;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const RTM_NEWADDR: u16 = 20;
const RTM_GETADDR: u16 = 22;
const NLM_F_REQUEST: u16 = 0x1;
const NLM_F_DUMP: u16 = 0x300;
const IFADDRMSG: usize = 8;
const IFA_ADDRESS: u16 = 1;
const IFA_LOCAL: u16 = 2;
const AF_INET: u8 = 2;
const AF_INET6: u8 = 10;

/// Every address of every interface of the network namespace this process is in.
pub fn read() -> std::io::Result<HashSet<IpAddr>> {
    let fd = rustix::net::socket_with(
        AddressFamily::NETLINK,
        SocketType::RAW,
        SocketFlags::CLOEXEC,
        // Protocol 0 is NETLINK_ROUTE.
        None,
    )?;
    // nlmsghdr + ifaddrmsg (family AF_UNSPEC: IPv4 and IPv6).
    let mut request = Vec::with_capacity(NLMSG_HDR + IFADDRMSG);
    request.extend_from_slice(&((NLMSG_HDR + IFADDRMSG) as u32).to_ne_bytes());
    request.extend_from_slice(&RTM_GETADDR.to_ne_bytes());
    request.extend_from_slice(&(NLM_F_REQUEST | NLM_F_DUMP).to_ne_bytes());
    request.extend_from_slice(&1u32.to_ne_bytes()); // seq
    request.extend_from_slice(&0u32.to_ne_bytes()); // pid: the kernel fills it
    request.extend_from_slice(&[0u8; IFADDRMSG]);
    rustix::net::sendto(
        &fd,
        &request,
        SendFlags::empty(),
        &netlink::SocketAddrNetlink::new(0, 0),
    )?;

    let mut found = HashSet::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let (_, len) = rustix::net::recv(&fd, &mut buf[..], RecvFlags::empty())?;
        if len == 0 {
            return Err(bad("the kernel closed the netlink dump early"));
        }
        if parse(&buf[..len.min(buf.len())], &mut found)? {
            return Ok(found);
        }
    }
}

/// Parse one datagram of the dump into `out`; true once the dump is complete.
fn parse(mut data: &[u8], out: &mut HashSet<IpAddr>) -> std::io::Result<bool> {
    while data.len() >= NLMSG_HDR {
        let len = u32::from_ne_bytes(data[0..4].try_into().unwrap_or_default()) as usize;
        let kind = u16::from_ne_bytes(data[4..6].try_into().unwrap_or_default());
        if len < NLMSG_HDR || len > data.len() {
            return Err(bad("a netlink message runs past its datagram"));
        }
        let body = &data[NLMSG_HDR..len];
        match kind {
            NLMSG_DONE => return Ok(true),
            NLMSG_ERROR => {
                let errno = body
                    .get(0..4)
                    .map(|b| i32::from_ne_bytes(b.try_into().unwrap_or_default()))
                    .unwrap_or(0);
                if errno != 0 {
                    return Err(std::io::Error::from_raw_os_error(-errno));
                }
            }
            RTM_NEWADDR if body.len() >= IFADDRMSG => {
                let family = body[0];
                let mut attrs = &body[IFADDRMSG..];
                while attrs.len() >= 4 {
                    let alen = u16::from_ne_bytes([attrs[0], attrs[1]]) as usize;
                    let atype = u16::from_ne_bytes([attrs[2], attrs[3]]);
                    if alen < 4 || alen > attrs.len() {
                        break;
                    }
                    let value = &attrs[4..alen];
                    if atype == IFA_ADDRESS || atype == IFA_LOCAL {
                        if let Some(ip) = ip_of(family, value) {
                            out.insert(ip);
                        }
                    }
                    attrs = &attrs[align4(alen).min(attrs.len())..];
                }
            }
            _ => {}
        }
        data = &data[align4(len).min(data.len())..];
    }
    Ok(false)
}

fn ip_of(family: u8, value: &[u8]) -> Option<IpAddr> {
    match (family, value.len()) {
        (AF_INET, 4) => Some(IpAddr::V4(Ipv4Addr::new(
            value[0], value[1], value[2], value[3],
        ))),
        (AF_INET6, 16) => {
            let octets: [u8; 16] = value.try_into().ok()?;
            Some(IpAddr::V6(Ipv6Addr::from(octets)))
        }
        _ => None,
    }
}

fn align4(n: usize) -> usize {
    (n + 3) & !3
}

fn bad(what: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_among_the_host_addresses() {
        let addrs = read().expect("rtnetlink answers");
        assert!(
            addrs.contains(&IpAddr::V4(Ipv4Addr::LOCALHOST)),
            "{addrs:?}"
        );
    }
}
