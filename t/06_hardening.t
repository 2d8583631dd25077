#!/usr/bin/perl
#
# Both programs are built with Debian's hardening, every feature
# (dpkg-buildflags with hardening=+all, the Makefile's H_CFLAGS and
# H_LDFLAGS), as a platform team's packages are.  Read from the ELF.
# Impossible:
#   - a stack overflow in either going unnoticed: no stack protector
#     (__stack_chk_fail)
#   - its relocations writable after start: no RELRO, or no BIND_NOW
#   - mt5credit's string and memory calls unchecked: no FORTIFY (__*_chk)
#   - the module compiled without -D_FORTIFY_SOURCE (its build's flags)

use strict;
use warnings;

use Test::More;

use lib 't/lib';
use Mt5Credit::Sandbox;
use Mt5Credit::Worker;

my $ROOT = $Mt5Credit::Sandbox::ROOT;
my %elf = (mt5credit => $Mt5Credit::Worker::BIN,
           module => $Mt5Credit::Sandbox::MODULE);

plan skip_all => 'the module is compiled into nginx (MT5CREDIT_MODULE=static)'
    if $elf{module} eq 'static';

for my $what (sort keys %elf) {
    my $f = $elf{$what};
    my $dynamic = `readelf -d -W $f 2>&1`;
    my $segments = `readelf -l -W $f 2>&1`;
    my $symbols = `readelf --dyn-syms -W $f 2>&1`;

    like($dynamic, qr/\(FLAGS\)\s+.*\bBIND_NOW\b|\(FLAGS_1\)\s+Flags:.*\bNOW\b/,
         "$what: BIND_NOW (all relocations at start)");
    like($segments, qr/\bGNU_RELRO\b/, "$what: RELRO");
    like($symbols, qr/\b__stack_chk_fail\b/, "$what: stack protector");
}

my %chk = map { $_ => 1 } `readelf --dyn-syms -W $elf{mt5credit}`
                          =~ /\b(__\w+_chk)\b/g;
cmp_ok(scalar(keys %chk), '>=', 3, 'mt5credit: FORTIFY checks its calls ('
       . join(' ', sort keys %chk) . ')');

SKIP: {
    my $objs = "$ROOT/build/nginx-src/objs/Makefile";
    skip 'the module was built from another nginx tree', 1 unless -f $objs;
    open my $fh, '<', $objs or die "$objs: $!";
    my ($cflags) = grep { /^CFLAGS\s*=/ } <$fh>;
    like($cflags // '', qr/-fstack-protector-strong/,
         'the module: compiled with the hardening flags');
    like($cflags // '', qr/-D_FORTIFY_SOURCE=[23]\b/,
         '... FORTIFY among them');
}

done_testing();
