import subprocess
import sys
import textwrap

from sessions_app.tokens import count_episode_tokens, count_tokens


def test_counts_cl100k_tokens():
    # "hello world" is two tokens in cl100k_base.
    assert count_tokens("hello world") == 2
    assert count_tokens("") == 0


def test_special_token_lookalikes_are_plain_text():
    assert count_tokens("<|endoftext|>") > 1


def test_episode_tokens_are_the_sum_of_both_texts():
    assert count_episode_tokens("hello world", "hello world") == 4


def test_encoder_loads_with_networking_unavailable(tmp_path):
    """A fresh interpreter with every socket refused and an empty tiktoken
    cache still counts tokens: the encoding comes from the installed file
    (tiktoken may copy that file into its cache, but never fetches one)."""
    script = textwrap.dedent(
        """
        import socket

        def refuse(*args, **kwargs):
            raise OSError("network disabled for this test")

        socket.socket.connect = refuse
        socket.create_connection = refuse
        socket.getaddrinfo = refuse

        from sessions_app.tokens import count_tokens
        print(count_tokens("The quick brown fox jumps over the lazy dog."))
        """
    )
    env = {"TIKTOKEN_CACHE_DIR": str(tmp_path), "DATA_GYM_CACHE_DIR": str(tmp_path), "PATH": ""}
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=".", timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "10"
