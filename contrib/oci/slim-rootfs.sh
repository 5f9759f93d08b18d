#!/bin/sh
# mmdebstrap's last customize hook (contrib/oci/lib.sh): drops from the root
# file system ROOT what nothing in a container runs.
#   sh slim-rootfs.sh ROOT
set -eu
root=$1
# apt satisfies init-system-helpers' "usrmerge | usr-is-merged" with both,
# and usrmerge brings perl (45 MB), of no use on the root mmdebstrap already
# made merged. mmdebstrap marks every package manual: perl's are marked auto,
# and debconf's Suggests: perl not taken as a reason to keep it, so that
# autoremove takes them with usrmerge (perl-base is Essential: it stays).
# shellcheck disable=SC2016  # expanded by the chroot's shell
chroot "$root" sh -c 'apt-mark auto $(dpkg-query -W -f "\${Package}\n" perl "libperl*" \
  "perl-modules-*" "lib*-perl" 2>/dev/null) >/dev/null 2>&1'
chroot "$root" apt-get purge -y -qq --autoremove -o APT::AutoRemove::SuggestsImportant=false \
  usrmerge >/dev/null
# apt's lists and downloads (a hook's apt-get leaves them), dpkg's and
# debconf's backups, logs, what the hooks left in /tmp.
cd "$root"
rm -rf var/lib/apt/lists/* var/cache/apt/* var/log/* var/cache/debconf/*-old \
  var/lib/dpkg/*-old tmp/*
