# The Docker-API backend's test image as a tarball: a minimal Debian root with
# python3 (pip and git for the corpus's control and git cases), built once from
# Debian's packages with debootstrap and cached at $cache/rootfs-py-git.tar.
# Shared by 58-docker.sh and 58b-podman.sh; the caller sets cache and defines
# skip (prints why and exits 0).
if [ ! -f "$cache/rootfs-py-git.tar" ]; then
  mkdir -p "$cache"
  rm -rf "$cache/rootfs.tmp"
  debootstrap --variant=minbase --include=python3,python3-pip,git bookworm "$cache/rootfs.tmp" \
    >"$cache/debootstrap.log" 2>&1 || { tail -5 "$cache/debootstrap.log"; skip "debootstrap failed"; }
  rm -rf "$cache/rootfs.tmp/var/cache/apt/archives/"*.deb "$cache/rootfs.tmp/var/lib/apt/lists/"*
  tar -C "$cache/rootfs.tmp" -cf "$cache/rootfs-py-git.tar.tmp" . && mv "$cache/rootfs-py-git.tar.tmp" "$cache/rootfs-py-git.tar"
  rm -rf "$cache/rootfs.tmp"
fi
