"""``dpadapt keys new --out DIR``: create an Ed25519 key pair to sign releases and models.

Sign what you release (`dpadapt release ... --sign KEY`); the other party passes your public key as
`--trust PUBKEY` so that a forged or re-signed file is refused.
"""

from __future__ import annotations

import argparse

from dpadapt import keys
from dpadapt.cli.main import add_command


def add_parser(sub: argparse._SubParsersAction) -> None:
    p, ksub = add_command(sub, "keys", __doc__.split("\n\n")[1], actions="action")
    new = ksub.add_parser("new", help="create a key pair in a folder (private key readable by you only)")
    new.add_argument("--out", required=True, help="folder for the key files")
    new.add_argument("--force", action="store_true", help="replace existing key files")
    new.set_defaults(func=run_new)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])


def run_new(args) -> int:
    private, public = keys.new_keypair(args.out, force=args.force)
    print(f"private key {private} (mode 0600: keep it secret; pass it as --sign)")
    print(f"public key  {public} (give it to the other party: --trust {public.name}), key id {keys.key_id(keys.load_public_key(public))}")
    return 0
