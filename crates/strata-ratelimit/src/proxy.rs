//! Who the client is behind proxies: which forwarding headers to believe, and from whom.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::str::FromStr;

use http::HeaderMap;
use http::header::FORWARDED;

/// How many forwarding entries are read, from the right: more proxies than this in front of
/// one application is not a deployment, and an absurd header costs no more than this.
pub const MAX_HOPS: usize = 32;

/// Which header the proxies in front of the application write the client's address to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ForwardedHeader {
    /// `X-Forwarded-For: client, proxy1, proxy2` (de facto; what most proxies and load
    /// balancers write).
    #[default]
    XForwardedFor,
    /// `Forwarded: for=client, for="[2001:db8::1]:4711"` (RFC 7239): the `for` parameter of
    /// each element.
    Forwarded,
}

/// A network of addresses, `192.0.2.0/24` or `2001:db8::/32`, or one address.
///
/// ```
/// use strata_ratelimit::Network;
///
/// let private: Network = "10.0.0.0/8".parse().unwrap();
/// assert!(private.contains("10.1.2.3".parse().unwrap()));
/// assert!(!private.contains("11.0.0.1".parse().unwrap()));
/// // An IPv4 address mapped into IPv6 is the IPv4 address.
/// assert!(private.contains("::ffff:10.0.0.1".parse().unwrap()));
/// assert!("10.0.0.0/33".parse::<Network>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Network {
    addr: IpAddr,
    prefix: u8,
}

impl Network {
    /// The network of `addr`'s first `prefix` bits (at most 32 for IPv4, 128 for IPv6).
    pub fn new(addr: IpAddr, prefix: u8) -> Result<Self, InvalidNetwork> {
        let addr = addr.to_canonical();
        let bits = if addr.is_ipv4() { 32 } else { 128 };
        if prefix > bits {
            return Err(InvalidNetwork(format!("{addr}/{prefix}")));
        }
        Ok(Self {
            addr: mask(addr, prefix),
            prefix,
        })
    }

    /// Whether `addr` is in the network.
    pub fn contains(&self, addr: IpAddr) -> bool {
        let addr = addr.to_canonical();
        addr.is_ipv4() == self.addr.is_ipv4() && mask(addr, self.prefix) == self.addr
    }
}

impl FromStr for Network {
    type Err = InvalidNetwork;

    fn from_str(text: &str) -> Result<Self, InvalidNetwork> {
        let invalid = || InvalidNetwork(text.to_owned());
        let (addr, prefix) = match text.split_once('/') {
            Some((addr, prefix)) => (addr, Some(prefix)),
            None => (text, None),
        };
        let addr: IpAddr = addr.trim().parse().map_err(|_| invalid())?;
        let canonical = addr.to_canonical();
        let bits = if canonical.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            Some(prefix) => prefix.trim().parse::<u8>().map_err(|_| invalid())?,
            None => {
                bits + if addr.is_ipv6() && canonical.is_ipv4() {
                    96
                } else {
                    0
                }
            }
        };
        // `::ffff:10.0.0.0/104` is the IPv4 network `10.0.0.0/8`.
        let prefix = if addr.is_ipv6() && canonical.is_ipv4() {
            prefix.checked_sub(96).ok_or_else(invalid)?
        } else {
            prefix
        };
        Self::new(canonical, prefix).map_err(|_| invalid())
    }
}

impl fmt::Display for Network {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

/// A network that does not parse: `10.0.0.0/33`, `proxy.local`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not an address or network (`10.0.0.0/8`, `::1`): `{0}`")]
pub struct InvalidNetwork(String);

/// `addr` with all but its first `prefix` bits cleared.
pub(crate) fn mask(addr: IpAddr, prefix: u8) -> IpAddr {
    match addr {
        IpAddr::V4(v4) => {
            let keep = u32::MAX
                .checked_shl(32 - u32::from(prefix.min(32)))
                .unwrap_or(0);
            IpAddr::V4(Ipv4Addr::from_bits(v4.to_bits() & keep))
        }
        IpAddr::V6(v6) => {
            let keep = u128::MAX
                .checked_shl(128 - u32::from(prefix.min(128)))
                .unwrap_or(0);
            IpAddr::V6(Ipv6Addr::from_bits(v6.to_bits() & keep))
        }
    }
}

/// Whose forwarding headers to believe. By default nobody's: the client is the peer of the
/// connection, and a client-supplied `X-Forwarded-For` changes nothing.
///
/// - [`networks`](Self::networks): the proxies at these addresses. The forwarding header is
///   read from the right (the entry the nearest proxy added) while the addresses are those
///   proxies'; the first address that is not a proxy's is the client. An entry that is not an
///   address (`unknown`, an obfuscated `_name`, garbage) ends the walk: the client is then the
///   last proxy read, so a malformed header never picks an address of the sender's choosing.
///   A request from an address outside these networks is keyed by that address, whatever
///   its headers say.
/// - [`hops`](Self::hops): exactly `n` proxies in front, whatever their addresses (a load
///   balancer with changing addresses; the application reachable only through it). The
///   client is the `n`-th entry from the right; with fewer entries, or an entry that is not
///   an address on the way, the nearest address read (the peer when none).
///
/// At most [`MAX_HOPS`] entries are read. Several header lines are one list, in order.
///
/// ```
/// use strata_ratelimit::{ForwardedHeader, TrustedProxies};
///
/// let behind_nginx = TrustedProxies::networks(["127.0.0.1", "10.0.0.0/8"]).unwrap();
/// let behind_a_balancer = TrustedProxies::hops(1).header(ForwardedHeader::Forwarded);
/// # let _ = (behind_nginx, behind_a_balancer);
/// ```
#[derive(Debug, Clone, Default)]
pub struct TrustedProxies {
    rule: Rule,
    header: ForwardedHeader,
}

#[derive(Debug, Clone, Default)]
enum Rule {
    #[default]
    Nobody,
    Networks(Box<[Network]>),
    Hops(usize),
}

impl TrustedProxies {
    /// Trust nobody: the client is the connection's peer (the default).
    pub fn none() -> Self {
        Self::default()
    }

    /// Trust the proxies in these networks (`"10.0.0.0/8"`, `"::1"`).
    pub fn networks<N: AsRef<str>>(
        networks: impl IntoIterator<Item = N>,
    ) -> Result<Self, InvalidNetwork> {
        let networks = networks
            .into_iter()
            .map(|network| network.as_ref().parse())
            .collect::<Result<_, _>>()?;
        Ok(Self {
            rule: Rule::Networks(networks),
            header: ForwardedHeader::default(),
        })
    }

    /// Trust exactly `hops` proxies in front of the application (0 is [`none`](Self::none);
    /// more than [`MAX_HOPS`] is [`MAX_HOPS`]).
    pub fn hops(hops: usize) -> Self {
        Self {
            rule: if hops == 0 {
                Rule::Nobody
            } else {
                Rule::Hops(hops.min(MAX_HOPS))
            },
            header: ForwardedHeader::default(),
        }
    }

    /// Reads `header` (default: `X-Forwarded-For`).
    #[must_use]
    pub fn header(mut self, header: ForwardedHeader) -> Self {
        self.header = header;
        self
    }

    /// Whether any header is believed: when not, the client is the peer.
    pub fn trusts_anyone(&self) -> bool {
        !matches!(self.rule, Rule::Nobody)
    }

    /// The client's address for a request from `peer` with `headers`; `None` when nothing
    /// says (no peer, as on a UNIX socket, and no proxy hop to believe).
    pub fn client(&self, peer: Option<IpAddr>, headers: &HeaderMap) -> Option<IpAddr> {
        let peer = peer.map(|peer| peer.to_canonical());
        match &self.rule {
            Rule::Nobody => peer,
            Rule::Networks(networks) => {
                let trusted = |addr: IpAddr| networks.iter().any(|n| n.contains(addr));
                let mut client = peer?;
                if !trusted(client) {
                    return Some(client);
                }
                for hop in self.hops_from_the_right(headers) {
                    let Some(addr) = hop else {
                        return Some(client);
                    };
                    client = addr;
                    if !trusted(addr) {
                        break;
                    }
                }
                Some(client)
            }
            Rule::Hops(hops) => {
                let mut client = peer;
                for hop in self.hops_from_the_right(headers).into_iter().take(*hops) {
                    match hop {
                        Some(addr) => client = Some(addr),
                        None => break,
                    }
                }
                client
            }
        }
    }

    /// The last [`MAX_HOPS`] entries of the forwarding header, rightmost first: an address, or
    /// `None` for an entry that is not one.
    fn hops_from_the_right(&self, headers: &HeaderMap) -> Vec<Option<IpAddr>> {
        let mut hops = Vec::new();
        match self.header {
            ForwardedHeader::XForwardedFor => {
                // No quoting in X-Forwarded-For: commas separate entries everywhere.
                'lines: for line in headers.get_all("x-forwarded-for").iter().rev() {
                    for entry in line.as_bytes().rsplit(|&b| b == b',') {
                        if hops.len() == MAX_HOPS {
                            break 'lines;
                        }
                        hops.push(parse_node(entry.trim_ascii()));
                    }
                }
            }
            ForwardedHeader::Forwarded => {
                for line in headers.get_all(FORWARDED).iter().rev() {
                    // Quoted strings may hold commas: split from the left, keep the right end.
                    let mut line_hops: Vec<Option<IpAddr>> = Vec::new();
                    for element in forwarded_elements(line.as_bytes()) {
                        if line_hops.len() == MAX_HOPS {
                            line_hops.remove(0);
                        }
                        line_hops.push(forwarded_for(element));
                    }
                    let room = MAX_HOPS - hops.len();
                    hops.extend(line_hops.into_iter().rev().take(room));
                    if hops.len() == MAX_HOPS {
                        break;
                    }
                }
            }
        }
        hops
    }
}

/// An address as proxies write one: `192.0.2.1`, `192.0.2.1:4711`, `2001:db8::1`,
/// `[2001:db8::1]`, `[2001:db8::1]:4711`; anything else is `None`.
fn parse_node(bytes: &[u8]) -> Option<IpAddr> {
    // Longer than any address with a port: not one, and not worth parsing.
    if bytes.len() > 64 {
        return None;
    }
    let text = std::str::from_utf8(bytes).ok()?;
    if let Ok(addr) = text.parse::<IpAddr>() {
        return Some(addr.to_canonical());
    }
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Some(addr.ip().to_canonical());
    }
    let inner = text.strip_prefix('[')?.strip_suffix(']')?;
    inner
        .parse::<Ipv6Addr>()
        .ok()
        .map(|v6| IpAddr::V6(v6).to_canonical())
}

/// The elements of a `Forwarded` line, split at commas outside quoted strings.
fn forwarded_elements(line: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = Some(line);
    std::iter::from_fn(move || {
        let text = rest?;
        if let Some(at) = split_point(text, b',') {
            rest = Some(&text[at + 1..]);
            Some(&text[..at])
        } else {
            rest = None;
            Some(text)
        }
    })
}

/// The first `separator` outside a quoted string (`\` escapes inside one).
fn split_point(text: &[u8], separator: u8) -> Option<usize> {
    let mut quoted = false;
    let mut escaped = false;
    for (at, &byte) in text.iter().enumerate() {
        if escaped {
            escaped = false;
        } else if quoted && byte == b'\\' {
            escaped = true;
        } else if byte == b'"' {
            quoted = !quoted;
        } else if !quoted && byte == separator {
            return Some(at);
        }
    }
    None
}

/// The `for` of one `Forwarded` element (`for=192.0.2.1;proto=https`), as an address.
fn forwarded_for(element: &[u8]) -> Option<IpAddr> {
    let mut rest = element;
    loop {
        let end = split_point(rest, b';');
        let pair = end.map_or(rest, |at| &rest[..at]).trim_ascii();
        if let Some(eq) = pair.iter().position(|&b| b == b'=')
            && pair[..eq].trim_ascii().eq_ignore_ascii_case(b"for")
        {
            let value = pair[eq + 1..].trim_ascii();
            let value = value
                .strip_prefix(b"\"")
                .and_then(|v| v.strip_suffix(b"\""))
                .unwrap_or(value);
            return parse_node(value);
        }
        rest = &rest[end? + 1..];
    }
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;

    use super::*;

    fn headers(name: &'static str, values: &[&str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for value in values {
            headers.append(name, HeaderValue::from_str(value).unwrap());
        }
        headers
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn by_default_the_peer_whatever_the_headers() {
        let proxies = TrustedProxies::none();
        assert!(!proxies.trusts_anyone());
        let forged = headers("x-forwarded-for", &["203.0.113.9"]);
        assert_eq!(
            proxies.client(Some(ip("192.0.2.1")), &forged),
            Some(ip("192.0.2.1"))
        );
        assert_eq!(proxies.client(None, &forged), None);
        let forged = headers("forwarded", &["for=203.0.113.9"]);
        assert_eq!(
            proxies.client(Some(ip("192.0.2.1")), &forged),
            Some(ip("192.0.2.1"))
        );
        // A mapped IPv4 peer is the IPv4 address.
        assert_eq!(
            proxies.client(Some(ip("::ffff:192.0.2.1")), &forged),
            Some(ip("192.0.2.1"))
        );
    }

    #[test]
    fn listed_proxies_are_walked_through_from_the_right() {
        let proxies = TrustedProxies::networks(["10.0.0.0/8", "::1"]).unwrap();
        let chain = headers(
            "x-forwarded-for",
            &["6.6.6.6, 198.51.100.7", "10.0.0.2:8080"],
        );
        // The peer and 10.0.0.2 are proxies; 198.51.100.7 is not: the client. What it
        // claimed before itself (6.6.6.6) is not read.
        assert_eq!(
            proxies.client(Some(ip("10.0.0.1")), &chain),
            Some(ip("198.51.100.7"))
        );
        assert_eq!(
            proxies.client(Some(ip("::1")), &chain),
            Some(ip("198.51.100.7"))
        );
        // Not from a proxy: the header is the sender's own, ignored.
        assert_eq!(
            proxies.client(Some(ip("198.51.100.8")), &chain),
            Some(ip("198.51.100.8"))
        );
        // From a proxy without the header: the proxy.
        assert_eq!(
            proxies.client(Some(ip("10.0.0.1")), &HeaderMap::new()),
            Some(ip("10.0.0.1"))
        );
        // Only proxies in the list: the leftmost.
        let internal = headers("x-forwarded-for", &["10.9.9.9, 10.0.0.2"]);
        assert_eq!(
            proxies.client(Some(ip("10.0.0.1")), &internal),
            Some(ip("10.9.9.9"))
        );
        // No peer (a UNIX socket): nothing to start from.
        assert_eq!(proxies.client(None, &chain), None);
    }

    #[test]
    fn garbage_ends_the_walk_at_the_last_proxy() {
        let proxies = TrustedProxies::networks(["10.0.0.0/8"]).unwrap();
        let long = "9".repeat(10_000);
        for garbage in [
            "not-an-ip",
            "unknown",
            "",
            "999.1.1.1",
            "1.2.3.4.5",
            "[::1",
            "::1]:80",
            "[10.0.0.9]",
            long.as_str(),
        ] {
            let value = format!("203.0.113.5, {garbage}, 10.0.0.3");
            let mut map = HeaderMap::new();
            map.insert("x-forwarded-for", HeaderValue::from_str(&value).unwrap());
            assert_eq!(
                proxies.client(Some(ip("10.0.0.1")), &map),
                Some(ip("10.0.0.3")),
                "{garbage:?}"
            );
        }
        // Bytes that are not UTF-8.
        let mut map = HeaderMap::new();
        map.insert(
            "x-forwarded-for",
            HeaderValue::from_bytes(b"\xff\xfe, 10.0.0.3").unwrap(),
        );
        assert_eq!(
            proxies.client(Some(ip("10.0.0.1")), &map),
            Some(ip("10.0.0.3"))
        );
    }

    #[test]
    fn an_absurdly_long_chain_is_read_only_so_far() {
        let proxies = TrustedProxies::networks(["10.0.0.0/8"]).unwrap();
        let long = vec!["10.1.1.1"; 100_000].join(",");
        let map = headers("x-forwarded-for", &[&format!("203.0.113.1,{long}")]);
        // 32 proxies read, all trusted: the last one read.
        assert_eq!(
            proxies.client(Some(ip("10.0.0.1")), &map),
            Some(ip("10.1.1.1"))
        );
        let many_lines: Vec<&str> = vec!["10.2.2.2"; 1000];
        let map = headers("x-forwarded-for", &many_lines);
        assert_eq!(
            proxies.client(Some(ip("10.0.0.1")), &map),
            Some(ip("10.2.2.2"))
        );
        let forwarded = TrustedProxies::networks(["10.0.0.0/8"])
            .unwrap()
            .header(ForwardedHeader::Forwarded);
        let long = vec!["for=10.1.1.1"; 10_000].join(",");
        let map = headers("forwarded", &[&format!("for=203.0.113.1,{long}")]);
        assert_eq!(
            forwarded.client(Some(ip("10.0.0.1")), &map),
            Some(ip("10.1.1.1"))
        );
    }

    #[test]
    fn hop_counting() {
        let one = TrustedProxies::hops(1);
        let two = TrustedProxies::hops(2);
        let map = headers("x-forwarded-for", &["6.6.6.6, 198.51.100.7, 10.0.0.2"]);
        let peer = Some(ip("10.0.0.1"));
        assert_eq!(one.client(peer, &map), Some(ip("10.0.0.2")));
        assert_eq!(two.client(peer, &map), Some(ip("198.51.100.7")));
        // Fewer entries than hops: the leftmost one read, never past the list.
        let short = headers("x-forwarded-for", &["198.51.100.7"]);
        assert_eq!(two.client(peer, &short), Some(ip("198.51.100.7")));
        assert_eq!(two.client(peer, &HeaderMap::new()), peer);
        // Garbage on the way: the nearest address before it.
        let bad = headers("x-forwarded-for", &["6.6.6.6, junk, 10.0.0.2"]);
        assert_eq!(
            TrustedProxies::hops(3).client(peer, &bad),
            Some(ip("10.0.0.2"))
        );
        // Behind a proxy on a UNIX socket there is no peer, but the hop says.
        assert_eq!(one.client(None, &map), Some(ip("10.0.0.2")));
        assert_eq!(TrustedProxies::hops(0).client(peer, &map), peer);
        assert_eq!(
            TrustedProxies::hops(usize::MAX).client(peer, &map),
            Some(ip("6.6.6.6"))
        );
    }

    #[test]
    fn the_forwarded_header() {
        let proxies = TrustedProxies::networks(["10.0.0.0/8"])
            .unwrap()
            .header(ForwardedHeader::Forwarded);
        let map = headers(
            "forwarded",
            &[
                r#"for=6.6.6.6, for="[2001:db8:cafe::17]:4711";proto=https;by="a,b""#,
                "For=10.0.0.2;proto=http",
            ],
        );
        assert_eq!(
            proxies.client(Some(ip("10.0.0.1")), &map),
            Some(ip("2001:db8:cafe::17"))
        );
        // Obfuscated or unknown: the walk ends at the last proxy.
        for hidden in ["for=_hidden", "for=unknown", "proto=http", "for"] {
            let map = headers(
                "forwarded",
                &[&format!("for=6.6.6.6, {hidden}, for=10.0.0.2")],
            );
            assert_eq!(
                proxies.client(Some(ip("10.0.0.1")), &map),
                Some(ip("10.0.0.2")),
                "{hidden}"
            );
        }
        // An unbalanced quote runs to the end of the line: one element of garbage, and the
        // walk ends at the peer.
        let map = headers("forwarded", &["for=6.6.6.6, for=\", for=10.0.0.2"]);
        assert_eq!(
            proxies.client(Some(ip("10.0.0.1")), &map),
            Some(ip("10.0.0.1"))
        );
        // X-Forwarded-For is not read when Forwarded is the header.
        let other = headers("x-forwarded-for", &["198.51.100.7"]);
        assert_eq!(
            proxies.client(Some(ip("10.0.0.1")), &other),
            Some(ip("10.0.0.1"))
        );
    }

    #[test]
    fn networks_parse_and_match() {
        assert!(TrustedProxies::networks(["10.0.0.0/8", "fd00::/8"]).is_ok());
        let error = TrustedProxies::networks(["proxy.local"]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "not an address or network (`10.0.0.0/8`, `::1`): `proxy.local`"
        );
        for bad in [
            "10.0.0.0/33",
            "::/129",
            "10.0.0.0/-1",
            "10.0.0.0/",
            "::ffff:1.2.3.4/95",
        ] {
            assert!(bad.parse::<Network>().is_err(), "{bad}");
        }
        let mapped: Network = "::ffff:10.0.0.0/104".parse().unwrap();
        assert_eq!(mapped.to_string(), "10.0.0.0/8");
        let one_mapped: Network = "::ffff:10.0.0.1".parse().unwrap();
        assert_eq!(one_mapped.to_string(), "10.0.0.1/32");
        let all: Network = "0.0.0.0/0".parse().unwrap();
        assert!(all.contains(ip("203.0.113.1")));
        assert!(!all.contains(ip("2001:db8::1")));
        let v6: Network = "2001:db8::/32".parse().unwrap();
        assert!(v6.contains(ip("2001:db8:ffff::1")));
        assert!(!v6.contains(ip("2001:db9::1")));
    }
}
