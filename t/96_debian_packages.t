#!/usr/bin/perl
#
# The Debian packages (debian/, "make deb"), read as apt and a platform
# team would, then extracted into a temp root and used from there.
# Impossible:
#   - a package whose name, version, section or dependencies are wrong:
#     the module not tied to the nginx ABI it was built for (apt would
#     let nginx move under it), the system user made without sysusers
#   - a file missing or in the wrong place: the .so outside nginx's
#     modules directory, no modules-available file, the binary not in
#     /usr/bin, no man page, the migrations or migrate missing, a unit
#     missing, the configuration not a conffile or readable by everyone
#   - either package failing lintian, apart from the overrides that say
#     why (debian/*.lintian-overrides)
#   - a packaged binary built without the hardening: no stack protector,
#     no BIND_NOW, no FORTIFY in mt5credit, the module compiled without
#     -D_FORTIFY_SOURCE
#   - the packaged modules-available file not loading the packaged module
#     into nginx, or the packaged edge example failing nginx -t with it
#   - a packaged unit that systemd-analyze verify warns about, or whose
#     ExecStart is not the packaged binary
#   - the packaged migrations not building the schema on an empty database
#   - a command of "mt5credit --help" missing from the man page, or the
#     man page warning when formatted
#   - units enabled or started by the package before anyone configured
#     them (a worker with no database would restart for ever)
#   - an upgrade stopping the enabled services and starting none (on
#     29185f3 --no-start also ended restart-after-upgrade: the preinst
#     stopped them, the postinst started nothing), or a removal leaving
#     them running (no prerm)
#   - a unit's Documentation= naming a file the package compressed away

use strict;
use warnings;

use File::Path qw(make_path);
use Test::More;

use lib 't/lib';
use Mt5Credit::Sandbox;

my $ROOT = $Mt5Credit::Sandbox::ROOT;

sub sh {
    my ($cmd) = @_;
    my $out = `$cmd 2>&1`;
    return ($? >> 8, $out);
}

for my $tool (qw(dpkg-deb dpkg-buildpackage lintian)) {
    plan skip_all => "$tool is not installed (make deps)"
        unless grep { -x "$_/$tool" } split /:/, $ENV{PATH};
}

my $sb = Mt5Credit::Sandbox->new;
my $dir = $sb->dir;

chomp(my $version = `cat $ROOT/VERSION`);
chomp(my $arch = `dpkg --print-architecture`);
my $deb_dir = "$ROOT/build/deb";
my %deb = (module => "$deb_dir/libnginx-mod-http-mt5-credit_${version}_$arch.deb",
           batch => "$deb_dir/mt5credit_${version}_$arch.deb");

# up to date, or built now ("make test" builds them first, as the tree's
# owner: then this is a no-op)
my ($rc, $out) = sh("make -s -C $ROOT deb");
is($rc, 0, 'make deb') or diag $out;
ok(-f $deb{$_}, "built: $deb{$_}") for sort keys %deb;

# --- metadata -----------------------------------------------------------------

sub field {
    my ($deb, $name) = @_;
    my $v = `dpkg-deb -f $deb $name`;
    chomp $v;
    return $v;
}

my $abi = `cat /usr/share/nginx/src/debian/libnginx-mod.abisubstvars`
          =~ /^nginx:abi=(\S+)/m ? $1 : '';
ok($abi, "nginx-dev names the ABI: $abi");

is(field($deb{module}, 'Package'), 'libnginx-mod-http-mt5-credit',
   "the module's package is named as Debian's modules are");
is(field($deb{module}, 'Version'), $version, '... version VERSION');
is(field($deb{module}, 'Section'), 'httpd', '... section httpd');
like(field($deb{module}, 'Depends'), qr/(?:^|, )\Q$abi\E(?:,|$)/,
     "... depends on the nginx ABI it was built for ($abi)");
like(`dpkg-query -W -f='\${Provides}' nginx`, qr/\Q$abi\E/,
     "... which the installed nginx provides");
like(field($deb{module}, 'Depends'), qr/\blibpq5\b.*|\blibhiredis/,
     '... and on the libraries it links (shlibs)');
is(field($deb{module}, 'Recommends'), 'nginx',
   '... and recommends the nginx it is a module of');

is(field($deb{batch}, 'Package'), 'mt5credit', 'the batch package');
is(field($deb{batch}, 'Version'), $version, '... version VERSION');
like(field($deb{batch}, 'Depends'),
     qr/systemd \| systemd-standalone-sysusers \| systemd-sysusers/,
     '... depends on something that makes its sysusers user');
like(field($deb{batch}, 'Depends'), qr/\bpostgresql-client\b/,
     '... and on psql, which migrate runs');

# --- contents -----------------------------------------------------------------

sub contents {
    my ($deb) = @_;
    my %c;
    for (`dpkg-deb -c $deb`) {
        my ($mode, $owner, @rest) = split ' ';
        my $path = $rest[3];
        $path =~ s{^\./}{/};
        $c{$path} = "$mode $owner";
    }
    return \%c;
}

my $mc = contents($deb{module});
my $bc = contents($deb{batch});

ok(exists $mc->{'/usr/lib/nginx/modules/ngx_mt5_credit_module.so'},
   'the module: the .so in /usr/lib/nginx/modules');
ok(exists $mc->{'/usr/share/nginx/modules-available/mod-http-mt5-credit.conf'},
   '... its modules-available file');
ok(exists $mc->{'/usr/share/doc/libnginx-mod-http-mt5-credit/examples/mt5credit-edge.conf'},
   '... the edge example');
is_deeply([ grep { m{^/etc/} } sort keys %$mc ], [],
          '... nothing in /etc: the enabling link is made by postinst');
is_deeply([ sort grep { m{^/usr/share/mt5credit/console/.} } keys %$mc ],
          [ map { "/usr/share/mt5credit/console/$_" }
                qw(console.css console.js index.html) ],
          '... the console\'s pages in /usr/share/mt5credit/console');
ok(exists $mc->{'/usr/share/doc/libnginx-mod-http-mt5-credit/examples/mt5credit-console.conf'},
   '... and the console example');

is($bc->{'/usr/bin/mt5credit'} // '', '-rwxr-xr-x root/root',
   'mt5credit in /usr/bin');
ok(exists $bc->{'/usr/share/man/man1/mt5credit.1.gz'}, '... its man page');
my @sql = grep { m{^/usr/share/mt5credit/sql/\d{3}_\w+\.sql$} } keys %$bc;
is(scalar @sql, scalar(my @src = glob("$ROOT/sql/[0-9][0-9][0-9]_*.sql")),
   'every migration in /usr/share/mt5credit/sql (' . scalar(@sql) . ')');
is($bc->{'/usr/share/mt5credit/sql/migrate'} // '', '-rwxr-xr-x root/root',
   '... and migrate, executable');
ok(exists $bc->{'/usr/share/mt5credit/monitoring/mt5credit-alerts.yml'}
   && exists $bc->{'/usr/share/mt5credit/monitoring/mt5credit-dashboard.json'},
   'the alert rules and the dashboard in /usr/share/mt5credit/monitoring, '
   . 'which minimal images keep');
is_deeply([ sort grep { m{^/lib/systemd/system/.} } keys %$bc ],
          [ map { "/lib/systemd/system/$_" }
                sort qw(mt5credit-worker.service mt5credit-payout.service
                        mt5credit-outbound.service
                        mt5credit-poll-provider.service
                        mt5credit-reconcile@.service
                        mt5credit-reconcile@.timer
                        mt5credit-backfill@.service
                        mt5credit-backfill@.timer
                        mt5credit-audit-seal.service
                        mt5credit-audit-seal.timer
                        mt5credit-status-textfile.service
                        mt5credit-status-textfile.timer
                        mt5credit-unit-failed@.service) ],
          'the systemd units, in /lib/systemd/system');
ok(exists $bc->{'/usr/lib/sysusers.d/mt5credit.conf'},
   'the system user, as a sysusers.d file');
is($bc->{'/etc/mt5credit/mt5credit.conf'} // '', '-rw-r----- root/root',
   '/etc/mt5credit/mt5credit.conf, mode 0640 (group set by postinst)');
ok(exists $bc->{'/usr/share/doc/mt5credit/runbook.md'},
   'the docs, uncompressed: the units name them (Documentation=)');
ok(!grep({ m{^/var/} } keys %$bc),
   'nothing in /var: the state directory is StateDirectory=');

{
    my $ctl = "$dir/control";
    make_path($ctl);
    system("dpkg-deb -e $deb{batch} $ctl") == 0 or die;
    is(`cat $ctl/conffiles`, "/etc/mt5credit/mt5credit.conf\n",
       'the configuration is a conffile, and the only one');
    my $postinst = `cat $ctl/postinst`;
    like($postinst, qr/systemd-sysusers .*mt5credit\.conf/,
         'postinst makes the user with systemd-sysusers');
    like($postinst, qr/dpkg-statoverride --update --add root mt5credit 0640/,
         '... then gives the configuration to its group (statoverride)');
    ok(index($postinst, 'systemd-sysusers') < index($postinst,
       'dpkg-statoverride --update'), '... in that order');
    like($postinst, qr/_dh_action=restart.*deb-systemd-invoke \$_dh_action [^\n]*'mt5credit-payout\.service' .*'mt5credit-worker\.service'/s,
         'an upgrade restarts the units on the new binary (deb-systemd-invoke '
         . 'acts on enabled ones only: a fresh install starts none)');
    ok(!-e "$ctl/preinst" || `cat $ctl/preinst` !~ /deb-systemd-invoke stop/,
       '... and nothing stops them before it (no preinst stop)');
    like(`cat $ctl/prerm`, qr/"\$1" = remove .*deb-systemd-invoke stop .*'mt5credit-worker\.service'/s,
         'a removal stops them (prerm)');
    my @lines = split /\n/, $postinst;
    my @enable = grep { $lines[$_] =~ /deb-systemd-helper enable/ } 0..$#lines;
    my $guard = sub {    # the statement before it, past comments
        my $i = $_[0] - 1;
        $i-- while $i > 0 && $lines[$i] =~ /^\s*#/;
        return $lines[$i];
    };
    ok(@enable && !grep({ $guard->($_) !~ /was-enabled/ } @enable),
       '... or enabled, unless it was before (an upgrade keeps it): '
       . scalar(@enable) . ' guarded');
}

{
    my $ctl = "$dir/control-module";
    make_path($ctl);
    system("dpkg-deb -e $deb{module} $ctl") == 0 or die;
    like(`cat $ctl/postinst`,
         qr{ln -sf /usr/share/nginx/modules-available/\$from}
         , "the module's postinst links modules-available into "
         . 'modules-enabled (dh_nginx, as Debian\'s module packages do)');
    like(`cat $ctl/postinst`, qr/mod-http-mt5-credit\.conf:50-mod-http-mt5-credit\.conf/,
         '... as 50-mod-http-mt5-credit.conf');
    like(`cat $ctl/prerm $ctl/postrm`, qr/\.removed/,
         '... and its prerm/postrm move it aside on remove, drop it on purge');
}

# --- lintian ------------------------------------------------------------------

{
    ($rc, $out) = sh("lintian --pedantic -I --no-tag-display-limit "
                     . "$deb{module} $deb{batch}");
    my @tags = grep { /^[EWIPX]: / } split /\n/, $out;
    is_deeply(\@tags, [], 'lintian --pedantic -I: nothing, apart from the '
              . 'documented overrides') or diag $out;
    ($rc, $out) = sh("lintian --pedantic -I --show-overrides "
                     . "$deb{module} $deb{batch}");
    my @over = $out =~ /^O: (\S+: \S+)/mg;
    my %over = map { $_ => 1 } @over;
    is_deeply([ sort keys %over ],
              [ 'libnginx-mod-http-mt5-credit: hardening-no-fortify-functions',
                'libnginx-mod-http-mt5-credit: package-contains-documentation-outside-usr-share-doc',
                'mt5credit: non-standard-file-perm',
                'mt5credit: package-supports-alternative-init-but-no-init.d-script' ],
              '... and the overrides are exactly those (each says why)');
}

# --- extracted into a temp root -----------------------------------------------

my $root = "$dir/root";
make_path($root);
for (sort keys %deb) {
    ($rc, $out) = sh("dpkg-deb -x $deb{$_} $root");
    is($rc, 0, "dpkg-deb -x $_") or diag $out;
}

# the ELF, as packaged (stripped by dh_strip; the hardening stays)
for my $f ("$root/usr/bin/mt5credit",
           "$root/usr/lib/nginx/modules/ngx_mt5_credit_module.so") {
    my $name = $f =~ s{.*/}{}r;
    like(`readelf -d -W $f`, qr/\bBIND_NOW\b|\(FLAGS_1\)\s+Flags:.*\bNOW\b/,
         "packaged $name: BIND_NOW");
    like(`readelf -l -W $f`, qr/\bGNU_RELRO\b/, "packaged $name: RELRO");
    like(`readelf --dyn-syms -W $f`, qr/\b__stack_chk_fail\b/,
         "packaged $name: stack protector");
}
{
    my %chk = map { $_ => 1 } `readelf --dyn-syms -W $root/usr/bin/mt5credit`
                              =~ /\b(__\w+_chk)\b/g;
    cmp_ok(scalar(keys %chk), '>=', 3, 'packaged mt5credit: FORTIFY ('
           . join(' ', sort keys %chk) . ')');
    my $log = `cat $deb_dir/module-build.log`;
    my @joined = $log =~ /^cc -c ((?:[^\n]*\\\n)*[^\n]*)/mg;
    my ($line) = grep { /ngx_mt5_credit_handler\.c/ } @joined;
    like($line // '', qr/-D_FORTIFY_SOURCE=[23]\b/,
         'packaged module: compiled with -D_FORTIFY_SOURCE (its build log)');
    like($line // '', qr/-fstack-protector-strong/, '... and the stack protector');
}

($rc, $out) = sh("$root/usr/bin/mt5credit --version");
is($rc, 0, 'the packaged mt5credit runs');
my (undef, $commit) = split ' ', `cat $ROOT/build/build-id`;
like($out, qr/\Q$version\E.*\Q$commit\E/s,
     "... and says the version and commit it was built from ($commit)");

# --- the man page ---------------------------------------------------------------

{
    ($rc, $out) = sh("man --warnings -E UTF-8 -l $root/usr/share/man/man1/"
                     . "mt5credit.1.gz >/dev/null");
    is($out, '', 'the man page formats without a warning');
    my $man = `zcat $root/usr/share/man/man1/mt5credit.1.gz`;
    my ($commands) = $man =~ /^\.SH COMMANDS\n(.*?)^\.SH /ms;
    my @documented = ($commands // '') =~ /^\.TP\n\.B (\S+)/mg;
    s/\\-/-/g for @documented;
    my $help = `$root/usr/bin/mt5credit --help`;
    my ($list) = $help =~ /^commands:\n(.*?)\n\n/ms;
    my @commands = ($list // '') =~ /^  (\S+)/mg;
    cmp_ok(scalar @commands, '>=', 10, 'mt5credit --help lists its commands ('
           . scalar(@commands) . ')');
    is_deeply(\@documented, \@commands,
              '... each in the man page, in the same order');
    like($man, qr/^\.TH MT5CREDIT 1 \S+ "mt5-credit \Q$version\E"/m,
         '... which names this version');
}

# --- nginx -t with the packaged module and its modules-available file -----------

{
    make_path("$dir/prefix", "$dir/etc/mt5credit", "$dir/logs", "$dir/body");
    symlink("$root/usr/lib/nginx/modules", "$dir/prefix/modules") or die;
    $sb->write_file('etc/mt5credit/stripe.secret', "whsec_package_test\n");
    my $port = Mt5Credit::Sandbox::free_port();
    my $edge = `cat $root/usr/share/doc/libnginx-mod-http-mt5-credit/examples/mt5credit-edge.conf`;
    $edge =~ s{/etc/mt5credit}{$dir/etc/mt5credit}g;
    $edge =~ s{127\.0\.0\.1:8081}{127.0.0.1:$port};
    my $console = `cat $root/usr/share/doc/libnginx-mod-http-mt5-credit/examples/mt5credit-console.conf`;
    like($console, qr{alias /usr/share/mt5credit/console/;},
         'the console example serves the packaged pages');
    $console =~ s{/etc/mt5credit}{$dir/etc/mt5credit}g;
    my $cport = Mt5Credit::Sandbox::free_port();
    $console =~ s{127\.0\.0\.1:8082}{127.0.0.1:$cport};
    $edge .= $console;
    $sb->write_file('edge.conf', $edge);
    my $temp = Mt5Credit::Sandbox::nginx_temp_paths($dir);
    my $main = sub {
        my ($load) = @_;
        return <<"CONF";
$load
pid $dir/nginx-package.pid;
error_log $dir/logs/error.log;
events { worker_connections 64; }
http {
    access_log off;
$temp
    include $dir/edge.conf;
}
CONF
    };
    my $available = "$root/usr/share/nginx/modules-available/mod-http-mt5-credit.conf";
    is(`cat $available`, "load_module modules/ngx_mt5_credit_module.so;\n",
       'modules-available: the module by its path under nginx\'s prefix, '
       . 'as Debian\'s are');
    $sb->write_file('nginx-package.conf', $main->("include $available;"));
    my $t = "/usr/sbin/nginx -t -p $dir/prefix/ -c $dir/nginx-package.conf "
          . "-e $dir/logs/error.log";
    ($rc, $out) = sh($t);
    is($rc, 0, 'nginx -t: the packaged modules-available file loads the '
       . 'packaged module, and the packaged edge and console examples pass')
        or diag $out;
    $sb->write_file('nginx-package.conf', $main->(''));
    ($rc, $out) = sh($t);
    isnt($rc, 0, '... without that file, the example fails')
        or diag $out;
    like($out, qr/unknown directive "mt5_credit_postgres"/,
         '... on the first directive of the module');
}

# --- systemd-analyze verify, inside the root ----------------------------------------

SKIP: {
    skip 'systemd-analyze is not installed', 11
        unless -x '/usr/bin/systemd-analyze';
    # the root has our units and binary; the targets they name and
    # /bin/sh come from this machine's systemd
    my $u = "$root/lib/systemd/system";
    system("cp -an /lib/systemd/system/. $u/ 2>/dev/null");
    make_path("$root/bin");
    system("cp /bin/dash $root/bin/sh") == 0 or die;
    my $verify = "cd $u && systemd-analyze verify --root=$root "
               . "mt5credit-worker.service mt5credit-payout.service "
               . "mt5credit-outbound.service "
               . "mt5credit-poll-provider.service "
               . "mt5credit-reconcile\@stripe.service "
               . "mt5credit-reconcile\@stripe.timer "
               . "mt5credit-backfill\@stripe.service "
               . "mt5credit-backfill\@stripe.timer "
               . "mt5credit-audit-seal.service "
               . "mt5credit-audit-seal.timer "
               . "mt5credit-status-textfile.service "
               . "mt5credit-status-textfile.timer";
    ($rc, $out) = sh($verify);
    ok($rc == 0 && $out eq '', 'systemd-analyze verify --root: every '
       . 'packaged unit clean, its ExecStart the packaged binary') or diag $out;
    for my $unit (qw(mt5credit-worker.service mt5credit-reconcile@.service)) {
        like(`cat $u/$unit`, qr/^StateDirectory=mt5credit\b/m,
             "$unit: /var/lib/mt5credit is its StateDirectory=");
    }
    rename("$root/usr/bin/mt5credit", "$root/usr/bin/mt5credit.moved") or die;
    ($rc, $out) = sh($verify);
    like($out, qr{Command /usr/bin/mt5credit is not executable},
         '... which verify really looks for inside the root');
    rename("$root/usr/bin/mt5credit.moved", "$root/usr/bin/mt5credit") or die;

    # every service under the same sandbox: the reconcile unit scored 3.5
    # against 1.8 for the rest, with no reason (issue 31); a unit that
    # loses a protection shows here
    for my $unit (qw(mt5credit-worker.service mt5credit-payout.service
                     mt5credit-outbound.service
                     mt5credit-poll-provider.service
                     mt5credit-reconcile@stripe.service
                     mt5credit-backfill@stripe.service
                     mt5credit-audit-seal.service
                     mt5credit-status-textfile.service
                     mt5credit-unit-failed@x.service)) {
        ($rc, $out) = sh("cd $u && systemd-analyze security --offline=true "
                         . "--root=$root $unit");
        my ($score) = $out =~ /Overall exposure level for \S+: ([\d.]+)/;
        ok(defined $score && $score <= 1.8,
           "systemd-analyze security: $unit exposure "
           . ($score // '?') . ', at most 1.8 like every unit')
            or diag $out;
    }
}

# --- the packaged migrations build the schema ---------------------------------------

{
    $sb->start_postgres;
    $sb->psql('CREATE DATABASE packaged');
    my @args = ('-h', '127.0.0.1', '-p', $sb->pg_port, '-U', 'mt5', '-d',
                'packaged');
    ($rc, $out) = sh("$root/usr/share/mt5credit/sql/migrate @args");
    is($rc, 0, 'the packaged migrate builds an empty database') or diag $out;
    like($out, qr/schema up to date/, '... up to date');
    my $q = "SELECT count(*) FROM mt5credit.schema_migration";
    chomp(my $n = `psql -X -At @args -c "$q"`);
    is($n, scalar @src, "... every migration recorded ($n)");
    $q = "SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON "
       . "n.oid = p.pronamespace WHERE n.nspname = 'mt5credit'";
    chomp(my $installed = `psql -X -At @args -c "$q"`);
    is($installed, $sb->sql1($q),
       "... with every function of the tree's schema ($installed)");
}

done_testing;
