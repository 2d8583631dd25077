#!/usr/bin/perl
#
# "make deps" on a package that is really missing ("hello": small, needed
# by nothing; installed by the test, then purged), both ways a fresh
# machine is run: as root (no sudo there) and as a user with sudo.  This
# makes impossible:
#   - the install branch broken as root while CI, whose machine has every
#     package, only ever takes the "all present" one (it once ran
#     "-E apt-get ...": an empty $(SUDO) before sudo's flag)
#   - a fresh machine's empty package lists stopping the install: a
#     package with no candidate makes it run "apt-get update" first
#   - a user without root getting anything but sudo: refused by sudo, the
#     run fails and nothing is installed; allowed, the package is there
#
# Run by t/run-tests as the user who started it, not as the tester.
# Without root or passwordless sudo it is skipped, and under CI=true that
# is a failure: CI must prove the install branch.

use strict;
use warnings;

use Cwd qw(abs_path);
use File::Basename qw(dirname);
use File::Temp qw(tempdir);
use Test::More;

use lib dirname(__FILE__) . '/../lib';
use Mt5Credit::Command qw(run as_root installed);

my $ROOT = abs_path(dirname(__FILE__) . '/../..');
my $PKG = 'hello';
my $TESTER = 'mt5credit-test';
my $SUDOERS = '/etc/sudoers.d/mt5credit-deps-test';

my $is_root = $> == 0;
my $has_sudo = !$is_root && system('sudo -n true >/dev/null 2>&1') == 0;

if (!$is_root && !$has_sudo) {
    if ($ENV{CI}) {
        fail('make deps is tested: CI runs as root or with passwordless sudo');
        done_testing();
        exit 1;
    }
    plan skip_all => 'needs root or passwordless sudo';
}

# --- helpers -------------------------------------------------------------

sub apt_get {
    my (@args) = @_;
    my ($rc, $out) = run(as_root('env', 'DEBIAN_FRONTEND=noninteractive',
                                 'SUDO_FORCE_REMOVE=yes', 'apt-get', '-q',
                                 '-y', @args));
    diag($out) if $rc != 0;
    return $rc == 0;
}

# in the tree, named relatively: the tester may be running in a copy of
# it (t/run-as-tester, for a tree in root's home)
sub make_deps {
    my (@pre) = @_;
    return run(@pre, 'make', '-s', '--no-print-directory', 'deps',
               "DEB_PACKAGES=$PKG");
}

chdir $ROOT or die "$ROOT: $!";

# --- the machine as it was, and as it is left ---------------------------

my $had_pkg = installed($PKG);
my $had_sudo = installed('sudo');
my $granted;

END {
    my $rc = $?;

    if ($granted) {
        unlink $SUDOERS;
    }
    if (!$had_pkg && installed($PKG)) {
        apt_get('purge', $PKG);
    }
    if ($had_pkg && !installed($PKG)) {
        apt_get('install', '--no-install-recommends', $PKG);
    }
    if ($is_root && !$had_sudo && installed('sudo')) {
        apt_get('purge', 'sudo');
    }

    $? = $rc;
}

if ($had_pkg) {
    ok(apt_get('purge', $PKG), "$PKG purged first: it must really be missing");
}
ok(!installed($PKG), "$PKG is not installed");

# --- as root, with no package lists: update, then install -----------------

{
    my $tmp = tempdir(CLEANUP => 1);
    mkdir "$tmp/lists" or die;
    mkdir "$tmp/lists/partial" or die;
    chmod 0755, $tmp;

    # a fresh machine's empty lists, without touching the system's
    open my $fh, '>', "$tmp/apt.conf" or die;
    print $fh qq{Dir::State::Lists "$tmp/lists/";\n};
    close $fh;

    my ($rc, $out) = make_deps(as_root('env', "APT_CONFIG=$tmp/apt.conf"));

    is($rc, 0, 'as root, with empty package lists: make deps succeeds')
        or diag($out);
    like($out, qr/no candidate for $PKG: apt-get update/,
         'it noticed the package has no candidate and updated the lists');
    ok(scalar(glob("$tmp/lists/*_Packages*")),
       'the update really fetched package lists');
    like($out, qr/^deps: installed $PKG$/m, 'it says what it installed');
    ok(installed($PKG), "$PKG is installed");

    ($rc, $out) = make_deps(as_root());
    is($rc, 0, 'make deps again: nothing to do');
    like($out, qr/^deps: all Debian packages present$/m,
         'it says all packages are present');

    ok(apt_get('purge', $PKG), "$PKG purged");
    ok(!installed($PKG), "$PKG is missing again");
}

# --- as a user with sudo ----------------------------------------------------

if ($is_root) {
    # sudo itself through make deps: the same path a fresh box takes
    if (!$had_sudo) {
        my ($rc, $out) = run('make', '-s', '--no-print-directory', 'deps',
                             'DEB_PACKAGES=sudo');
        is($rc, 0, 'sudo installed through make deps') or diag($out);
    }

    # the tester, with no right to sudo and no terminal to ask on
    my ($rc, $out) = make_deps('setsid', '-w', "$ROOT/t/run-as-tester");
    isnt($rc, 0, 'a user sudo refuses: make deps fails');
    like($out, qr/sudo/, 'and the failure is sudo\'s') or diag($out);
    ok(!installed($PKG), "nothing installed: $PKG still missing");

    # now allowed to run apt-get through sudo, and only that
    open my $fh, '>', $SUDOERS or die "$SUDOERS: $!";
    $granted = 1;
    print $fh "$TESTER ALL=(root) NOPASSWD: "
            . "/usr/bin/env DEBIAN_FRONTEND=noninteractive apt-get *\n";
    close $fh;
    chmod 0440, $SUDOERS;
    is(system('visudo', '-qcf', $SUDOERS), 0, 'the sudo grant is valid');

    ($rc, $out) = make_deps('setsid', '-w', "$ROOT/t/run-as-tester");
    is($rc, 0, 'a user with sudo: make deps succeeds') or diag($out);
    like($out, qr/^deps: installed $PKG$/m, 'it says what it installed');
    ok(installed($PKG), "$PKG is installed, through sudo");

    unlink $SUDOERS;
    $granted = 0;

} else {
    my ($rc, $out) = make_deps();
    is($rc, 0, 'as this user, through sudo: make deps succeeds')
        or diag($out);
    like($out, qr/^deps: installed $PKG$/m, 'it says what it installed');
    ok(installed($PKG), "$PKG is installed, through sudo");
}

ok(apt_get('purge', $PKG), "$PKG purged at the end");

done_testing();
