//! The guest: where its kernel and initramfs are (built by
//! scripts/setup-microvm), which accelerator runs it, and the QEMU command
//! line of one run.
//!
//! The machine is QEMU's `microvm` (no PCI, no firmware, virtio-mmio only)
//! with the serial console (a log file), virtio-9p shares (the run's control
//! directory, the workspace, the view's read-only directories) and, in
//! network allowlist mode only, one virtio-serial port whose host end is the
//! helper's egress relay socket. There is no network device at all, no disk,
//! no vsock, no USB, no display.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Where scripts/setup-microvm puts the guest unless told otherwise.
pub const DEFAULT_DIR: &str = "/var/lib/airlock-microvm";
/// Overrides [`DEFAULT_DIR`].
pub const DIR_ENV: &str = "AIRLOCK_MICROVM_DIR";
/// `kvm` or `tcg`: overrides the accelerator choice.
pub const ACCEL_ENV: &str = "AIRLOCK_MICROVM_ACCEL";
/// The QEMU binary.
pub const QEMU: &str = "qemu-system-x86_64";
/// Guest memory on top of the command's limit: the guest kernel, the
/// initramfs (busybox and modules, unpacked) and the init's tmpfs.
pub const OVERHEAD_MIB: u64 = 96;

/// The built guest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Image {
    pub vmlinux: PathBuf,
    pub initrd: PathBuf,
    pub qemu: PathBuf,
    pub accel: Accel,
    /// Why this accelerator (for the run's notes).
    pub accel_why: String,
}

/// How QEMU runs the guest's instructions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Accel {
    /// Hardware virtualisation through /dev/kvm.
    Kvm,
    /// QEMU's software emulation (the Tiny Code Generator): slower, but
    /// needs nothing from the host's CPU or kernel.
    Tcg,
}

impl Accel {
    pub fn as_str(self) -> &'static str {
        match self {
            Accel::Kvm => "kvm",
            Accel::Tcg => "tcg",
        }
    }

    /// How long a boot may take to reach init before it counts as hung.
    pub fn boot_allowance_ms(self) -> u64 {
        match self {
            Accel::Kvm => 15_000,
            Accel::Tcg => 90_000,
        }
    }
}

fn find_in_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// The guest directory in effect.
pub fn dir() -> PathBuf {
    std::env::var_os(DIR_ENV)
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_DIR))
}

/// Finds the guest and QEMU, and chooses the accelerator; `Err` says what is
/// missing and how to get it.
pub fn locate() -> Result<Image, String> {
    let qemu = find_in_path(QEMU).ok_or_else(|| {
        format!(
            "{QEMU} is not installed; Hint: run scripts/setup-microvm (it installs \
             qemu-system-x86 and builds the guest)"
        )
    })?;
    let dir = dir();
    let (vmlinux, initrd) = (dir.join("vmlinux"), dir.join("initrd.gz"));
    for f in [&vmlinux, &initrd] {
        if !f.is_file() {
            return Err(format!(
                "the guest's {} is missing; Hint: run scripts/setup-microvm {} \
                 (or set {DIR_ENV} to where it built the guest)",
                f.display(),
                dir.display()
            ));
        }
    }
    let (accel, accel_why) = choose_accel();
    Ok(Image {
        vmlinux,
        initrd,
        qemu,
        accel,
        accel_why,
    })
}

/// KVM when /dev/kvm opens and this host is not itself a guest; otherwise
/// TCG. A nested /dev/kvm (the host's CPU flags say `hypervisor`) is not
/// trusted: on some hosts stock guest kernels crash on it, so it takes
/// `AIRLOCK_MICROVM_ACCEL=kvm` to use it.
pub fn choose_accel() -> (Accel, String) {
    match std::env::var(ACCEL_ENV).as_deref() {
        Ok("kvm") => return (Accel::Kvm, format!("{ACCEL_ENV}=kvm")),
        Ok("tcg") => return (Accel::Tcg, format!("{ACCEL_ENV}=tcg")),
        _ => {}
    }
    let kvm_opens = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
        .is_ok();
    let nested = std::fs::read_to_string("/proc/cpuinfo")
        .map(|c| {
            c.lines()
                .any(|l| l.starts_with("flags") && l.split_whitespace().any(|w| w == "hypervisor"))
        })
        .unwrap_or(false);
    match (kvm_opens, nested) {
        (true, false) => (Accel::Kvm, "/dev/kvm is usable".into()),
        (true, true) => (
            Accel::Tcg,
            format!(
                "software emulation (TCG): /dev/kvm is nested (this host is itself a guest), \
                 where stock guest kernels may crash; {ACCEL_ENV}=kvm forces it"
            ),
        ),
        (false, _) => (
            Accel::Tcg,
            "software emulation (TCG): /dev/kvm is absent or not usable".into(),
        ),
    }
}

/// The host CPU's rate in kHz (for the guest's TSC under TCG).
fn host_khz() -> u64 {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("cpu MHz"))
                .and_then(|l| l.split(':').nth(1))
                .and_then(|v| v.trim().parse::<f64>().ok())
        })
        .map(|mhz| (mhz * 1000.0) as u64)
        .filter(|k| *k > 0)
        .unwrap_or(2_000_000)
}

/// The kernel command line. Under TCG the guest's TSC runs at the host's
/// rate: telling the kernel that rate and the delay-loop value (lpj, HZ=250)
/// skips the PIT calibration that hangs some boots.
pub fn cmdline(accel: Accel) -> String {
    let mut s = String::from("console=ttyS0 quiet panic=-1 rdinit=/init");
    if accel == Accel::Tcg {
        let khz = host_khz();
        s.push_str(&format!(
            " tsc_early_khz={khz} lpj={} tsc=reliable no_timer_check",
            khz * 4
        ));
    }
    s
}

/// A host directory the view shows read-only, shared with the guest.
#[derive(Debug, Clone, PartialEq)]
pub struct Share {
    /// The virtio-9p mount tag (short: the kernel takes at most 31 bytes).
    pub tag: String,
    pub src: PathBuf,
    pub dst: PathBuf,
}

/// Read-only shares a run may have (each is a virtio-mmio transport of
/// QEMU's microvm machine; the control share and the workspace take two).
pub const MAX_SHARES: usize = 16;

/// One run's QEMU arguments (after the program name).
pub struct Machine<'a> {
    pub image: &'a Image,
    pub memory_mib: u64,
    pub cpus: u32,
    pub console_log: &'a Path,
    pub control_dir: &'a Path,
    pub workspace_dir: &'a Path,
    pub workspace_read_only: bool,
    pub shares: &'a [Share],
    /// Allowlist mode: the unix socket the helper's egress relay listens on;
    /// QEMU connects the guest's virtio-serial port
    /// ([`airlock_relay::mux::PORT_NAME`]) to it.
    pub egress_socket: Option<&'a Path>,
}

impl Machine<'_> {
    pub fn args(&self) -> Vec<String> {
        let i = self.image;
        let mut a: Vec<String> = [
            "-M",
            "microvm",
            "-accel",
            i.accel.as_str(),
            "-cpu",
            if i.accel == Accel::Kvm { "host" } else { "max" },
            "-nodefaults",
            "-no-user-config",
            "-display",
            "none",
            "-no-reboot",
            // QEMU's own seccomp filter: no new privileges, no spawning, no
            // obsolete system calls, no scheduler or resource changes.
            "-sandbox",
            "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        a.extend([
            "-m".into(),
            format!("{}M", self.memory_mib),
            "-smp".into(),
            self.cpus.max(1).to_string(),
            "-serial".into(),
            format!("file:{}", self.console_log.display()),
            "-fsdev".into(),
            format!(
                "local,id=ctl,path={},security_model=none",
                self.control_dir.display()
            ),
            "-device".into(),
            "virtio-9p-device,fsdev=ctl,mount_tag=ctl".into(),
            "-fsdev".into(),
            format!(
                "local,id=ws,path={},security_model=none{}",
                self.workspace_dir.display(),
                if self.workspace_read_only {
                    ",readonly=on"
                } else {
                    ""
                }
            ),
            "-device".into(),
            "virtio-9p-device,fsdev=ws,mount_tag=ws".into(),
        ]);
        for s in self.shares {
            a.extend([
                "-fsdev".into(),
                format!(
                    "local,id={},path={},security_model=none,readonly=on",
                    s.tag,
                    // QEMU's option syntax doubles a comma inside a value.
                    s.src.display().to_string().replace(',', ",,")
                ),
                "-device".into(),
                format!("virtio-9p-device,fsdev={0},mount_tag={0}", s.tag),
            ]);
        }
        if let Some(sock) = self.egress_socket {
            // A byte stream, not a network: the guest's relay multiplexes
            // connections over it and the host end only ever reaches the
            // egress proxy.
            a.extend([
                "-device".into(),
                "virtio-serial-device,max_ports=2".into(),
                "-chardev".into(),
                format!(
                    "socket,id=egress,path={}",
                    sock.display().to_string().replace(',', ",,")
                ),
                "-device".into(),
                format!(
                    "virtserialport,chardev=egress,name={}",
                    airlock_relay::mux::PORT_NAME
                ),
            ]);
        }
        a.extend([
            "-kernel".into(),
            i.vmlinux.display().to_string(),
            "-initrd".into(),
            i.initrd.display().to_string(),
            "-append".into(),
            cmdline(i.accel),
        ]);
        a
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_machine_has_no_network_device() {
        let image = Image {
            vmlinux: "/g/vmlinux".into(),
            initrd: "/g/initrd.gz".into(),
            qemu: "/usr/bin/qemu-system-x86_64".into(),
            accel: Accel::Tcg,
            accel_why: String::new(),
        };
        let m = Machine {
            image: &image,
            memory_mib: 352,
            cpus: 1,
            console_log: Path::new("/s/console.log"),
            control_dir: Path::new("/s/ctl"),
            workspace_dir: Path::new("/s/merged"),
            workspace_read_only: true,
            shares: &[Share {
                tag: "r0".into(),
                src: "/usr".into(),
                dst: "/usr".into(),
            }],
            egress_socket: None,
        };
        let args = m.args().join(" ");
        assert!(args.contains("-nodefaults"), "{args}");
        assert!(
            !args.contains("-netdev") && !args.contains("-nic") && !args.contains("vsock"),
            "{args}"
        );
        assert!(
            args.contains("path=/s/merged,security_model=none,readonly=on"),
            "{args}"
        );
        assert!(args.contains("tsc_early_khz="), "{args}");
        assert!(
            args.contains("id=r0,path=/usr,security_model=none,readonly=on"),
            "{args}"
        );
        assert!(!args.contains("virtio-serial"), "{args}");

        // Allowlist mode adds the relay's port, and still no network device.
        let m = Machine {
            egress_socket: Some(Path::new("/s/vm/egress.sock")),
            ..m
        };
        let args = m.args().join(" ");
        assert!(
            args.contains("-chardev socket,id=egress,path=/s/vm/egress.sock")
                && args.contains("virtserialport,chardev=egress,name=airlock.egress"),
            "{args}"
        );
        assert!(
            !args.contains("-netdev") && !args.contains("-nic") && !args.contains("vsock"),
            "{args}"
        );
    }
}
