//! Writes `builtin_generated.rs`: the loader's result for `programs.toml` as
//! Rust statics (see [`super::built`]), and the tests that keep it current.

use super::built::{self, regenerate_command};
use super::{Effect, EnvEntry, Knowledge, ProgramEntry, Text, Trigger, PROGRAMS_TOML};
use std::fmt::Write as _;

/// Set while building and testing airlock-policy, it lets a changed
/// `programs.toml` compile (built.rs), and makes the test
/// `knowledge_generated_is_current` rewrite `builtin_generated.rs` instead of
/// failing.
const REGENERATE_ENV: &str = "AIRLOCK_REGENERATE";

/// Where the generated file lives, for the test that rewrites it.
const GENERATED_PATH: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/src/knowledge/builtin_generated.rs"
);

/// `kb` as the source of `builtin_generated.rs`, made from a text whose
/// [`built::text_hash`] is `source_hash`. Deterministic: the order is the
/// knowledge base's, and strings and chars are written with `{:?}`, which is
/// a valid Rust literal for any of them.
pub fn render(kb: &Knowledge, source_hash: u64) -> String {
    let mut s = String::with_capacity(128 * 1024);
    s.push_str(concat!(
        "// @generated from programs.toml by the policy loader (load::knowledge_from_str)\n",
        "// and knowledge::generate::render. Do not edit: after changing programs.toml, run\n",
        "//   ",
        regenerate_command!(),
        "\n",
        "// The crate does not build while this file is older than programs.toml, and the\n",
        "// tests knowledge_generated_* check it against the loader (see knowledge/built.rs).\n",
        "\n",
        "use super::built::{EFFECT, PROGRAM};\n",
        "use super::{Action, EnvEntry, InnerCommand, Kind, Script, Takes, Text};\n",
        "use super::{Effect as E, LongOption as L, ProgramEntry as P, Trigger as T};\n",
        "use crate::shell::Access;\n",
        "use std::borrow::Cow::Borrowed as B;\n",
        "\n",
    ));
    let _ = writeln!(s, "pub const VERSION: i64 = {};", kb.version);
    let _ = writeln!(
        s,
        "/// built::text_hash of the programs.toml this was made from.\npub const SOURCE_HASH: u64 = {source_hash:#018x};\n"
    );
    let _ = writeln!(
        s,
        "pub static CONFIG_FILES: &[Text] = {};\n",
        strs(&kb.config_files)
    );
    s.push_str("pub static PROGRAMS: &[P] = &[\n");
    for p in kb.programs.iter() {
        program(&mut s, p);
    }
    s.push_str("];\n\npub static ENV: &[EnvEntry] = &[\n");
    for e in kb.env.iter() {
        env(&mut s, e);
    }
    s.push_str("];\n");
    s
}

/// `&[B("a"), B("b")]`: a slice of borrowed [`Text`].
fn strs(v: &[Text]) -> String {
    let items: Vec<String> = v.iter().map(|x| format!("B({x:?})")).collect();
    format!("&[{}]", items.join(", "))
}

/// A [`super::List`] of strings: `B(&[B("a")])`.
fn str_list(v: &[Text]) -> String {
    format!("B({})", strs(v))
}

fn chars(v: &[char]) -> String {
    let items: Vec<String> = v.iter().map(|c| format!("{c:?}")).collect();
    format!("B(&[{}])", items.join(", "))
}

fn option<T>(v: &Option<T>, f: impl Fn(&T) -> String) -> String {
    v.as_ref()
        .map_or_else(|| "None".into(), |x| format!("Some({})", f(x)))
}

fn program(s: &mut String, p: &ProgramEntry) {
    let _ = writeln!(s, "    P {{");
    let _ = writeln!(
        s,
        "        names: {}, origin: B({:?}),",
        str_list(&p.names),
        p.origin
    );
    if let Some(sub) = &p.subcommand {
        let _ = writeln!(s, "        subcommand: Some(B({sub:?})),");
    }
    if !p.about.is_empty() {
        let _ = writeln!(s, "        about: B({:?}),", p.about);
    }
    let flags = [
        ("abbreviations", p.abbreviations),
        ("subcommands", p.subcommands),
        ("globals_anywhere", p.globals_anywhere),
        ("options_first", p.options_first),
        ("old_style", p.old_style),
    ];
    let set: Vec<String> = flags
        .iter()
        .filter(|(_, on)| *on)
        .map(|(name, _)| format!("{name}: true,"))
        .collect();
    if !set.is_empty() {
        let _ = writeln!(s, "        {}", set.join(" "));
    }
    if !p.short_values.is_empty() {
        let _ = writeln!(s, "        short_values: {},", chars(&p.short_values));
    }
    if !p.short_optional.is_empty() {
        let _ = writeln!(s, "        short_optional: {},", chars(&p.short_optional));
    }
    if !p.stop_after.is_empty() {
        let _ = writeln!(s, "        stop_after: {},", str_list(&p.stop_after));
    }
    if !p.synonyms.is_empty() {
        let items: Vec<String> = p
            .synonyms
            .iter()
            .map(|(a, b)| format!("({a:?}, {b:?})"))
            .collect();
        let _ = writeln!(s, "        synonyms: B(&[{}]),", items.join(", "));
    }
    if !p.long.is_empty() {
        let _ = writeln!(s, "        long: B(&[");
        for o in p.long.iter() {
            let _ = writeln!(
                s,
                "            L {{ name: B({:?}), key: B({:?}), takes: Takes::{:?}, short: {} }},",
                o.name,
                o.key,
                o.takes,
                option(&o.short, |c| format!("{c:?}"))
            );
        }
        let _ = writeln!(s, "        ]),");
    }
    if !p.effects.is_empty() {
        let _ = writeln!(s, "        effects: B(&[");
        for e in p.effects.iter() {
            effect(s, e);
        }
        let _ = writeln!(s, "        ]),");
    }
    let _ = writeln!(s, "        ..PROGRAM\n    }},");
}

fn effect(s: &mut String, e: &Effect) {
    let trigger = match &e.trigger {
        Trigger::Option(o) => format!("T::Option(B({o:?}))"),
        Trigger::Argument(n) => format!("T::Argument({n})"),
        Trigger::AnyArgument => "T::AnyArgument".to_string(),
        Trigger::Always { min_args } => format!("T::Always {{ min_args: {min_args} }}"),
    };
    let mut fields = vec![
        format!("trigger: {trigger}"),
        format!("kind: Kind::{:?}", e.kind),
        format!("action: Action::{:?}", e.action),
    ];
    for (name, v) in [
        ("when", &e.when),
        ("requires", &e.requires),
        ("unless", &e.unless),
    ] {
        if !v.is_empty() {
            fields.push(format!("{name}: {}", str_list(v)));
        }
    }
    if let Some(a) = e.path {
        fields.push(format!("path: Some(Access::{a:?})"));
    }
    if e.inner != super::InnerCommand::None {
        fields.push(format!("inner: InnerCommand::{:?}", e.inner));
    }
    if let Some(sc) = e.script {
        fields.push(format!("script: Some(Script::{sc:?})"));
    }
    if e.reason.is_empty() {
        let _ = writeln!(s, "            E {{ {}, ..EFFECT }},", fields.join(", "));
    } else {
        let _ = writeln!(
            s,
            "            E {{ {},\n                reason: B({:?}), ..EFFECT }},",
            fields.join(", "),
            e.reason
        );
    }
}

fn env(s: &mut String, e: &EnvEntry) {
    let _ = writeln!(
        s,
        "    EnvEntry {{ names: {}, kind: Kind::{:?}, action: Action::{:?}, origin: B({:?}),\n        reason: B({:?}), options_of: {} }},",
        str_list(&e.names),
        e.kind,
        e.action,
        e.origin,
        e.reason,
        option(&e.options_of, |o| format!("B({o:?})"))
    );
}

/// The loader's result for the built-in text: what the data must equal.
fn loaded() -> Knowledge {
    crate::load::knowledge_from_str(PROGRAMS_TOML, super::BUILTIN_KNOWLEDGE_ORIGIN)
        .unwrap_or_else(|e| panic!("programs.toml must load: {e}"))
}

fn regenerating() -> bool {
    std::env::var_os(REGENERATE_ENV).is_some()
}

/// The data compiled in is what the loader makes of programs.toml: every
/// field (`Knowledge`'s `PartialEq` covers version, programs, env and
/// config_files) and the indexes it leaves out.
#[test]
fn knowledge_generated_equals_the_loader() {
    if regenerating() {
        // The data compiled into this binary may be the stale one being
        // replaced; the next run (without the variable) compares the new one.
        eprintln!("{REGENERATE_ENV} is set: not comparing the data being regenerated");
        return;
    }
    let loaded = loaded();
    let built = built::knowledge();
    assert!(built == loaded, "builtin_generated.rs differs from the loader's result for programs.toml; regenerate it with: {}", regenerate_command!());
    assert_eq!(built.index, loaded.index);
    assert_eq!(built.env_exact, loaded.env_exact);
    assert!(std::ptr::eq(super::builtin(), super::builtin()));
    assert!(*super::builtin() == loaded);
}

/// The checked-in file is, byte for byte, what rendering the loader's result
/// gives now; with AIRLOCK_REGENERATE set, it is rewritten instead.
#[test]
fn knowledge_generated_is_current() {
    let want = render(&loaded(), built::text_hash(PROGRAMS_TOML));
    check_generated_file(
        GENERATED_PATH,
        &want,
        "programs.toml",
        regenerate_command!(),
    );
}

/// With AIRLOCK_REGENERATE set, writes `want` to the generated file at `path`;
/// otherwise fails, naming the first differing line and `regenerate`, unless
/// the file is already `want` byte for byte. Shared by the generated data of
/// the knowledge base and of the built-in default policy.
pub(crate) fn check_generated_file(path: &str, want: &str, source: &str, regenerate: &str) {
    if regenerating() {
        std::fs::write(path, want).unwrap_or_else(|e| panic!("cannot write {path}: {e}"));
        eprintln!("{REGENERATE_ENV} is set: wrote {path}");
        return;
    }
    let have = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"));
    if have != want {
        let line = have
            .lines()
            .zip(want.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| have.lines().count().min(want.lines().count()));
        panic!(
            "{path} is not what {source} gives now (first difference at line {}); \
             regenerate it with: {regenerate}",
            line + 1,
        );
    }
}

#[test]
fn the_text_hash_is_fnv1a() {
    // The published FNV-1a 64 test vectors.
    assert_eq!(built::text_hash(""), 0xcbf2_9ce4_8422_2325);
    assert_eq!(built::text_hash("a"), 0xaf63_dc4c_8601_ec8c);
    assert_eq!(built::text_hash("foobar"), 0x8594_4171_f739_67e8);
}
