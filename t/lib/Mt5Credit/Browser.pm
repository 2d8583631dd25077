package Mt5Credit::Browser;

# Headless Chromium (Debian's chromium package) for checking what a page
# shows: the DOM after the page's own scripts ran (dump_dom), or a browser
# driven through the DevTools protocol over --remote-debugging-pipe (fds 3
# and 4, one JSON message per NUL): pages opened as a person, clicked,
# read and photographed (launch).  Nothing is downloaded.

use strict;
use warnings;

use Carp qw(croak);
use Fcntl qw(F_GETFD F_SETFD FD_CLOEXEC);
use IO::Handle;
use IO::Select;
use JSON::PP;
use MIME::Base64 qw(decode_base64 encode_base64);
use POSIX ();
use Time::HiRes qw(sleep time);

our $CHROMIUM = '/usr/bin/chromium';

sub available { -x $CHROMIUM }

# The serialized DOM of a local file, or undef if Chromium failed.  Bounded:
# a page that never settles cannot hang the suite.
sub dump_dom {
    my ($sb, $file) = @_;
    my $profile = $sb->dir . '/chromium-profile';
    my $out = $sb->dir . '/chromium-dom.html';
    my $rc = system("timeout 120 $CHROMIUM --headless --no-sandbox "
        . "--disable-gpu --no-first-run --disable-extensions "
        . "--user-data-dir=$profile --virtual-time-budget=5000 "
        . "--dump-dom file://$file > $out 2> $out.err");
    return undef if $rc != 0;
    open my $fh, '<', $out or return undef;
    local $/;
    return <$fh>;
}

# --------------------------------------------------------------- DevTools

# A browser of its own; stopped with its sandbox (registered there).
sub launch {
    my ($class, $sb) = @_;
    my $profile = $sb->dir . '/chromium-cdp';
    mkdir $profile;
    pipe(my $cmd_r, my $cmd_w) or croak "pipe: $!";
    pipe(my $ev_r, my $ev_w) or croak "pipe: $!";
    my $pid = fork // croak "fork: $!";
    if ($pid == 0) {
        setpgrp(0, 0);
        # above 4 first, so that neither lands on the other's target
        my $in = POSIX::dup(fileno $cmd_r);
        my $out = POSIX::dup(fileno $ev_w);
        POSIX::dup2($in, 3);
        POSIX::dup2($out, 4);
        POSIX::close($_) for $in, $out;
        for my $fd (3, 4) {
            open my $h, '<&=', $fd or POSIX::_exit(126);
            fcntl($h, F_SETFD, fcntl($h, F_GETFD, 0) & ~FD_CLOEXEC);
        }
        open STDOUT, '>>', $sb->dir . '/chromium-cdp.out';
        open STDERR, '>&', \*STDOUT;
        { no warnings 'exec';
          exec $CHROMIUM, '--headless', '--no-sandbox', '--disable-gpu',
              '--no-first-run', '--disable-extensions', '--mute-audio',
              '--remote-debugging-pipe', "--user-data-dir=$profile",
              '--window-size=1280,900', 'about:blank'; }
        POSIX::_exit(127);
    }
    close $cmd_r;
    close $ev_w;
    $cmd_w->autoflush(1);
    $sb->{pids}{chromium} = $pid;
    return bless { sb => $sb, pid => $pid, w => $cmd_w, r => $ev_r,
                   buf => '', id => 0, json => JSON::PP->new->canonical },
                 $class;
}

# One command; its result, or croaks with the browser's error.
sub call {
    my ($self, $method, $params, $session) = @_;
    my $id = ++$self->{id};
    my $msg = { id => $id, method => $method, params => $params || {} };
    $msg->{sessionId} = $session if $session;
    print { $self->{w} } $self->{json}->encode($msg), "\0";
    my $until = time + 60;
    while (time < $until) {
        while ((my $i = index($self->{buf}, "\0")) >= 0) {
            my $m = $self->{json}->decode(substr($self->{buf}, 0, $i));
            substr($self->{buf}, 0, $i + 1) = '';
            next unless defined $m->{id} && $m->{id} == $id;
            croak "$method: $m->{error}{message}" if $m->{error};
            return $m->{result};
        }
        my $sel = IO::Select->new($self->{r});
        next unless $sel->can_read(1);
        my $n = sysread($self->{r}, my $chunk, 1 << 20);
        croak "the browser went away during $method" unless $n;
        $self->{buf} .= $chunk;
    }
    croak "$method: no answer in 60 s";
}

# A page of its own browser context (its own cookies and cache), every
# request of it carrying headers (an Authorization, as SSO would).
sub page {
    my ($self, %opt) = @_;
    my $ctx = $self->call('Target.createBrowserContext')->{browserContextId};
    my $target = $self->call('Target.createTarget',
        { url => 'about:blank', browserContextId => $ctx })->{targetId};
    my $session = $self->call('Target.attachToTarget',
        { targetId => $target, flatten => JSON::PP::true })->{sessionId};
    my $page = bless { b => $self, s => $session }, 'Mt5Credit::Browser::Page';
    $page->cdp('Page.enable');
    $page->cdp('Network.enable');
    $page->cdp('Network.setExtraHTTPHeaders', { headers => $opt{headers} })
        if $opt{headers};
    return $page;
}

sub quit {
    my ($self) = @_;
    eval { $self->call('Browser.close') };
    kill 'TERM', -$self->{pid};
    $self->{sb}->reap('chromium', 'TERM', 10);
}

package Mt5Credit::Browser::Page;

use Carp qw(croak);
use MIME::Base64 qw(decode_base64);
use Time::HiRes qw(sleep time);

sub cdp { my ($p, $m, $params) = @_; $p->{b}->call($m, $params, $p->{s}) }

sub navigate {
    my ($p, $url) = @_;
    $p->cdp('Page.navigate', { url => $url });
}

# The value of an expression (a promise is awaited).
sub js {
    my ($p, $js) = @_;
    my $r = $p->cdp('Runtime.evaluate', { expression => $js,
        awaitPromise => JSON::PP::true, returnByValue => JSON::PP::true });
    croak "in the page: $r->{exceptionDetails}{exception}{description}"
        if $r->{exceptionDetails};
    return $r->{result}{value};
}

# Waits until the expression is true; whether it became true.
sub wait_for {
    my ($p, $js, $timeout) = @_;
    my $until = time + ($timeout || 20);
    while (time < $until) {
        my $v = eval { $p->js($js) };
        return 1 if $v;
        sleep 0.1;
    }
    return 0;
}

sub click {
    my ($p, $selector) = @_;
    my $js = JSON::PP->new->allow_nonref->encode($selector);
    $p->js("(function(){var e=document.querySelector($js);"
             . "if(!e)throw new Error('no '+$js);e.click();return 1})()");
}

sub type {
    my ($p, $selector, $text) = @_;
    my $j = JSON::PP->new->allow_nonref;
    $p->js('document.querySelector(' . $j->encode($selector) . ').value = '
             . $j->encode($text));
}

sub screenshot {
    my ($p, $file) = @_;
    my $r = $p->cdp('Page.captureScreenshot',
                     { format => 'png', captureBeyondViewport => JSON::PP::true });
    open my $fh, '>:raw', $file or croak "$file: $!";
    print $fh decode_base64($r->{data});
    close $fh;
    return -s $file;
}

1;
