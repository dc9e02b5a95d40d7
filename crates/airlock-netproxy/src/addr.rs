//! Which resolved addresses the proxy never connects to, whatever the name.
//!
//! The check runs on the address the proxy itself resolved and then connects to,
//! so a name that an attacker re-points at an internal address between two
//! lookups (DNS rebinding) still lands here.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The kind of address that is refused. `as_str` is the stable, machine-readable form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockedRange {
    Unspecified,
    Loopback,
    Private,
    UniqueLocal,
    LinkLocal,
    SharedCgnat,
    CloudMetadata,
    Multicast,
    Broadcast,
    Reserved,
    Documentation,
}

impl BlockedRange {
    pub fn as_str(self) -> &'static str {
        match self {
            BlockedRange::Unspecified => "unspecified",
            BlockedRange::Loopback => "loopback",
            BlockedRange::Private => "private",
            BlockedRange::UniqueLocal => "unique-local",
            BlockedRange::LinkLocal => "link-local",
            BlockedRange::SharedCgnat => "cgnat",
            BlockedRange::CloudMetadata => "cloud-metadata",
            BlockedRange::Multicast => "multicast",
            BlockedRange::Broadcast => "broadcast",
            BlockedRange::Reserved => "reserved",
            BlockedRange::Documentation => "documentation",
        }
    }
}

/// `None` when the address is a public unicast address the proxy may reach.
pub fn blocked_range(ip: IpAddr) -> Option<BlockedRange> {
    match ip {
        IpAddr::V4(v4) => blocked_v4(v4),
        IpAddr::V6(v6) => blocked_v6(v6),
    }
}

fn blocked_v4(ip: Ipv4Addr) -> Option<BlockedRange> {
    let o = ip.octets();
    let range = match o {
        [169, 254, 169, 254] | [169, 254, 170, 2] | [100, 100, 100, 200] => {
            BlockedRange::CloudMetadata
        }
        [0, ..] => BlockedRange::Unspecified,
        [127, ..] => BlockedRange::Loopback,
        [10, ..] | [192, 168, ..] => BlockedRange::Private,
        [172, b, ..] if (16..=31).contains(&b) => BlockedRange::Private,
        [100, b, ..] if (64..=127).contains(&b) => BlockedRange::SharedCgnat,
        [169, 254, ..] => BlockedRange::LinkLocal,
        [192, 0, 0, _] | [198, 18..=19, ..] => BlockedRange::Reserved,
        [192, 0, 2, _] | [198, 51, 100, _] | [203, 0, 113, _] => BlockedRange::Documentation,
        [255, 255, 255, 255] => BlockedRange::Broadcast,
        [224..=239, ..] => BlockedRange::Multicast,
        [240..=255, ..] => BlockedRange::Reserved,
        _ => return None,
    };
    Some(range)
}

fn blocked_v6(ip: Ipv6Addr) -> Option<BlockedRange> {
    let s = ip.segments();
    if ip.is_unspecified() {
        return Some(BlockedRange::Unspecified);
    }
    if ip.is_loopback() {
        return Some(BlockedRange::Loopback);
    }
    // Forms that carry an IPv4 address inside are judged by that address:
    // IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible (::a.b.c.d), NAT64 (64:ff9b::/96).
    if let Some(v4) = ip.to_ipv4_mapped() {
        return blocked_v4(v4);
    }
    let embedded = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    if s[..6] == [0, 0, 0, 0, 0, 0] {
        // Deprecated IPv4-compatible form: nothing legitimate uses it.
        return Some(blocked_v4(embedded).unwrap_or(BlockedRange::Reserved));
    }
    if s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0] {
        return blocked_v4(embedded);
    }
    // 6to4 (2002::/16) embeds an IPv4 address in segments 1..3.
    if s[0] == 0x2002 {
        let v4 = Ipv4Addr::new((s[1] >> 8) as u8, s[1] as u8, (s[2] >> 8) as u8, s[2] as u8);
        if let Some(r) = blocked_v4(v4) {
            return Some(r);
        }
    }
    let range = match s[0] {
        // AWS's IPv6 instance metadata endpoint lives inside the ULA range.
        0xfd00 if s[1] == 0x0ec2 && s[2..7] == [0, 0, 0, 0, 0] && s[7] == 0x254 => {
            BlockedRange::CloudMetadata
        }
        x if x & 0xfe00 == 0xfc00 => BlockedRange::UniqueLocal,
        x if x & 0xffc0 == 0xfe80 => BlockedRange::LinkLocal,
        x if x & 0xffc0 == 0xfec0 => BlockedRange::Private, // deprecated site-local
        x if x & 0xff00 == 0xff00 => BlockedRange::Multicast,
        0x2001 if s[1] == 0x0db8 => BlockedRange::Documentation,
        0x2001 if s[1] == 0 => BlockedRange::Reserved, // Teredo hides an IPv4 peer
        0x0100 if s[1..4] == [0, 0, 0] => BlockedRange::Reserved, // discard-only
        _ => return None,
    };
    Some(range)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Option<&'static str> {
        blocked_range(s.parse().unwrap()).map(BlockedRange::as_str)
    }

    #[test]
    fn internal_addresses_are_refused_in_every_spelling() {
        let cases = [
            ("127.0.0.1", "loopback"),
            ("127.3.2.1", "loopback"),
            ("0.0.0.0", "unspecified"),
            ("10.1.2.3", "private"),
            ("172.16.0.1", "private"),
            ("172.31.255.255", "private"),
            ("192.168.1.1", "private"),
            ("100.64.0.1", "cgnat"),
            ("169.254.169.254", "cloud-metadata"),
            ("169.254.1.1", "link-local"),
            ("224.0.0.251", "multicast"),
            ("255.255.255.255", "broadcast"),
            ("192.0.2.53", "documentation"),
            ("::", "unspecified"),
            ("::1", "loopback"),
            ("::ffff:127.0.0.1", "loopback"),
            ("::ffff:169.254.169.254", "cloud-metadata"),
            ("::ffff:10.0.0.1", "private"),
            ("::127.0.0.1", "loopback"),
            ("64:ff9b::a9fe:a9fe", "cloud-metadata"),
            ("2002:a9fe:a9fe::1", "cloud-metadata"),
            ("fd00:ec2::254", "cloud-metadata"),
            ("fd12:3456::1", "unique-local"),
            ("fe80::1", "link-local"),
            ("ff02::1", "multicast"),
            ("2001:db8::1", "documentation"),
            ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "reserved"),
        ];
        for (addr, want) in cases {
            assert_eq!(b(addr), Some(want), "{addr}");
        }
    }

    #[test]
    fn public_addresses_pass() {
        for addr in [
            "93.184.216.34",
            "1.1.1.1",
            "172.32.0.1",
            "100.128.0.1",
            "2606:4700::1111",
            "64:ff9b::808:808",
        ] {
            assert_eq!(b(addr), None, "{addr}");
        }
    }
}
