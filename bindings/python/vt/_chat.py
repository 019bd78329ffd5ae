"""vt.apply_chat_template: a conversation rendered with a chat template."""
from __future__ import annotations

from typing import Any, List, Mapping, Optional, Sequence, Union

from . import _vt

__all__ = ["apply_chat_template", "chat_prompt_token_ids"]

Message = Mapping[str, Any]


def _template_of(source: Union[str, _vt.Model, _vt.ChatTemplate, Any]) -> _vt.ChatTemplate:
    if isinstance(source, _vt.ChatTemplate):
        return source
    if isinstance(source, str):
        return _vt.ChatTemplate(source)
    if isinstance(source, _vt.Model):
        return _vt.ChatTemplate(model=source)
    model = getattr(source, "model", None)  # a vt.LLM
    if isinstance(model, _vt.Model):
        return _vt.ChatTemplate(model=model)
    raise TypeError("apply_chat_template: pass a vt.Model, vt.LLM, vt.ChatTemplate or a template string, "
                    f"not {type(source).__name__}")


def _tokenizer_of(source: Any) -> Optional[_vt.Tokenizer]:
    if isinstance(source, _vt.Model):
        return source.tokenizer
    model = getattr(source, "model", None)  # a vt.LLM
    return model.tokenizer if isinstance(model, _vt.Model) else None


def apply_chat_template(template: Union[str, _vt.Model, _vt.ChatTemplate, Any], messages: Sequence[Message],
                        add_generation_prompt: bool = True, *, tokenize: bool = False,
                        tokenizer: Optional[_vt.Tokenizer] = None, parse_special_in_content: bool = False,
                        **kwargs: Any) -> Union[str, List[int]]:
    """Renders messages with a chat template, as transformers'
    ``tokenizer.apply_chat_template(messages, tokenize=False, ...)`` does;
    with tokenize=True, the prompt's token ids instead.

    Args:
        template: a vt.Model or vt.LLM (its tokenizer.chat_template, with its
            BOS/EOS texts as bos_token/eos_token), a vt.ChatTemplate, or the
            Jinja text of a template (bos_token and eos_token then default to "").
        messages: a list of dicts such as {"role": "user", "content": "Hi"};
            other fields (tool_calls, tool_call_id, content parts) pass through.
        add_generation_prompt: end with the header of an assistant turn.
        tokenize: return token ids (ChatTemplate.tokenize): control tokens
            come only from the template's own text, so a message holding
            "<|im_end|><|im_start|>system" stays text (transformers,
            vLLM and llama-server turn it into control tokens). BOS is added
            by the model's rules unless the template writes it.
        tokenizer: the vt.Tokenizer for tokenize=True; default: the model's
            (template a vt.Model or vt.LLM).
        parse_special_in_content: with tokenize=True, control-token text in
            the messages and kwargs becomes control tokens too (the old,
            injectable behaviour, for callers that rely on it).
        **kwargs: further template variables: tools=[...], documents=[...],
            enable_thinking=False, bos_token="<s>", ...

    Returns:
        The prompt text (it holds control tokens as text), or with
        tokenize=True its token ids.

    Raises:
        VtNotFound: the model has no chat template.
        VtFormatError: a template with a syntax error.
        VtInvalidArgument: the template raised (raise_exception) or failed.
    """
    if not tokenize:
        return _template_of(template).apply(messages, add_generation_prompt, **kwargs)
    tok = tokenizer if tokenizer is not None else _tokenizer_of(template)
    if tok is None:
        raise TypeError("apply_chat_template(tokenize=True): pass tokenizer=, or a vt.Model / vt.LLM as template")
    return _template_of(template).tokenize(tok, messages, add_generation_prompt,
                                           parse_special_in_content=parse_special_in_content, **kwargs)


def chat_prompt_token_ids(tokenizer: _vt.Tokenizer, prompt: str) -> List[int]:
    """Token ids of a rendered chat prompt.

    Control-token text becomes control tokens anywhere in it, the users'
    messages included: prefer ChatTemplate.tokenize, which takes them only
    from the template's own text. The model's BOS is added by its own rules (add_special) unless the
    text already begins with the BOS text, as llama.cpp and transformers
    avoid a doubled BOS.
    """
    bos = tokenizer.bos
    starts_with_bos = False
    if bos is not None:
        bos_text = tokenizer.token_to_piece(bos, render_special=True).decode("utf-8", "replace")
        starts_with_bos = bool(bos_text) and prompt.startswith(bos_text)
    return tokenizer.encode(prompt, add_special=not starts_with_bos, parse_special=True)
