"""installed_version / distribution_name read metadata, map import names, never import."""

from __future__ import annotations

import sys

from packaging.version import Version

from torchenv.versions import distribution_name, installed_version, parse_version


def test_installed_version_of_a_throwaway_distribution(install_dist):
    install_dist("tev-meta", "1.2.3rc4")
    assert installed_version("tev-meta") == Version("1.2.3rc4")
    # names are normalised the PEP 503 way
    assert installed_version("tev_meta") == Version("1.2.3rc4")


def test_missing_distribution_gives_none():
    assert installed_version("tev-not-here-at-all") is None
    assert distribution_name("tev_not_here_at_all") is None


def test_import_name_maps_to_distribution(install_dist):
    install_dist("tev-provider", "0.7", modules={"tev_provided": "raise ImportError('no')"})
    assert distribution_name("tev_provided") == "tev-provider"
    assert installed_version("tev_provided") == Version("0.7")
    assert "tev_provided" not in sys.modules


def test_shadowing_install_is_seen_after_reset(install_dist):
    install_dist("tev-shadow", "1.0")
    assert installed_version("tev-shadow") == Version("1.0")
    install_dist("tev-shadow", "2.0")  # resets the caches, like implement_for.reset()
    assert installed_version("tev-shadow") == Version("2.0")


def test_legacy_version_strings_are_tolerated():
    assert parse_version("2.3.0-custom") == Version("2.3.0")
    assert parse_version("v1.4") == Version("1.4")
