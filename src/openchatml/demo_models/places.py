"""Place names for the tiny model's dialogues: real cities, some held out of training.

:data:`CITIES` are real cities of every continent (ASCII spellings). :func:`held_out_cities`
picks those the trained tiny model never sees in a dialogue, to test that it calls the
weather tool for places it was not taught: each is a name whose o200k tokens after a space
(``" Perpignan"`` → ``" Per" "pign" "an"``) and inside a JSON string (``"Per" "pign" "an"``)
differ only in that space, so a model that has learned the pieces from other names can copy
it into its arguments.
"""

from __future__ import annotations

from functools import cache
from typing import Final

from ..core.encoding import Encoding

_NAMES: Final = """
Paris, Lyon, Marseille, Toulouse, Nice, Nantes, Strasbourg, Montpellier, Bordeaux, Lille,
Rennes, Reims, Toulon, Grenoble, Dijon, Angers, Nimes, Brest, Limoges, Amiens, Perpignan, Metz,
Besancon, Orleans, Rouen, Caen, Nancy, Avignon, Cannes, Calais, London, Manchester, Birmingham,
Liverpool, Leeds, Glasgow, Edinburgh, Bristol, Cardiff, Belfast, Sheffield, Newcastle,
Nottingham, Leicester, Southampton, Brighton, Plymouth, Aberdeen, Dundee, Oxford, Cambridge,
York, Bath, Exeter, Norwich, Swansea, Inverness, Coventry, Derby, Portsmouth, Berlin, Hamburg,
Munich, Cologne, Frankfurt, Stuttgart, Dusseldorf, Leipzig, Dortmund, Essen, Bremen, Dresden,
Hanover, Nuremberg, Duisburg, Bochum, Wuppertal, Bielefeld, Bonn, Mannheim, Karlsruhe, Augsburg,
Wiesbaden, Kiel, Freiburg, Rostock, Potsdam, Heidelberg, Erfurt, Mainz, Madrid, Barcelona,
Valencia, Seville, Zaragoza, Malaga, Murcia, Palma, Bilbao, Alicante, Cordoba, Valladolid, Vigo,
Gijon, Granada, Oviedo, Pamplona, Santander, Toledo, Salamanca, Cadiz, Tarragona, Girona,
Burgos, Leon, Rome, Milan, Naples, Turin, Palermo, Genoa, Bologna, Florence, Bari, Catania,
Venice, Verona, Messina, Padua, Trieste, Parma, Modena, Perugia, Livorno, Cagliari, Pisa, Siena,
Bergamo, Lecce, Ravenna, Lisbon, Porto, Braga, Coimbra, Faro, Funchal, Amsterdam, Rotterdam,
Utrecht, Eindhoven, Groningen, Tilburg, Almere, Breda, Nijmegen, Leiden, Haarlem, Delft,
Maastricht, Arnhem, Brussels, Antwerp, Ghent, Bruges, Liege, Namur, Luxembourg, Vienna, Graz,
Linz, Salzburg, Innsbruck, Zurich, Geneva, Basel, Bern, Lausanne, Lucerne, Lugano, Prague, Brno,
Ostrava, Pilsen, Warsaw, Krakow, Lodz, Wroclaw, Poznan, Gdansk, Szczecin, Lublin, Katowice,
Bratislava, Kosice, Budapest, Debrecen, Szeged, Copenhagen, Aarhus, Odense, Aalborg, Stockholm,
Gothenburg, Malmo, Uppsala, Oslo, Bergen, Trondheim, Stavanger, Helsinki, Espoo, Tampere, Turku,
Oulu, Reykjavik, Dublin, Cork, Galway, Limerick, Tallinn, Tartu, Riga, Vilnius, Kaunas, Athens,
Thessaloniki, Patras, Heraklion, Sofia, Plovdiv, Varna, Bucharest, Cluj, Timisoara, Iasi,
Constanta, Belgrade, Novi Sad, Nis, Zagreb, Split, Rijeka, Dubrovnik, Ljubljana, Maribor,
Sarajevo, Mostar, Podgorica, Skopje, Tirana, Chisinau, Kyiv, Kharkiv, Odesa, Lviv, Dnipro,
Minsk, Moscow, Kazan, Novosibirsk, Omsk, Samara, Perm, Ufa, Volgograd, Sochi, Vladivostok,
Irkutsk, Murmansk, Istanbul, Ankara, Izmir, Bursa, Antalya, Adana, Konya, Trabzon, New York, Los
Angeles, Chicago, Houston, Phoenix, Philadelphia, San Antonio, San Diego, Dallas, San Jose,
Austin, Jacksonville, Columbus, Charlotte, Indianapolis, Seattle, Denver, Boston, Nashville,
Detroit, Portland, Memphis, Louisville, Baltimore, Milwaukee, Albuquerque, Tucson, Fresno,
Sacramento, Atlanta, Miami, Tampa, Orlando, Omaha, Raleigh, Minneapolis, Cleveland, Pittsburgh,
Cincinnati, Honolulu, Anchorage, Las Vegas, New Orleans, Salt Lake City, Kansas City, Saint
Louis, Buffalo, Richmond, Boise, Spokane, Tacoma, Madison, Savannah, Charleston, Santa Fe, Santa
Barbara, Santa Monica, San Francisco, Oakland, Berkeley, Pasadena, Long Beach, Palm Springs, El
Paso, Fort Worth, Des Moines, Little Rock, Baton Rouge, Green Bay, Toronto, Montreal, Vancouver,
Calgary, Edmonton, Ottawa, Winnipeg, Quebec City, Hamilton, Halifax, Victoria, Saskatoon,
Regina, Kelowna, Windsor, Mexico City, Guadalajara, Monterrey, Puebla, Tijuana, Cancun, Merida,
Oaxaca, Acapulco, Veracruz, Havana, Kingston, Nassau, San Juan, Santo Domingo, Panama City, San
Salvador, Managua, Tegucigalpa, Guatemala City, Bogota, Medellin, Cali, Cartagena, Caracas,
Maracaibo, Quito, Guayaquil, Lima, Cusco, Arequipa, La Paz, Santa Cruz, Santiago, Valparaiso,
Buenos Aires, Rosario, Mendoza, Montevideo, Asuncion, Sao Paulo, Rio de Janeiro, Brasilia,
Salvador, Fortaleza, Belo Horizonte, Manaus, Curitiba, Recife, Porto Alegre, Belem, Natal,
Cairo, Alexandria, Giza, Luxor, Aswan, Casablanca, Rabat, Marrakesh, Fez, Tangier, Tunis,
Algiers, Oran, Tripoli, Benghazi, Khartoum, Addis Ababa, Nairobi, Mombasa, Kampala, Kigali, Dar
es Salaam, Zanzibar, Lusaka, Harare, Maputo, Luanda, Kinshasa, Brazzaville, Lagos, Abuja, Kano,
Ibadan, Accra, Kumasi, Dakar, Bamako, Niamey, Ouagadougou, Abidjan, Conakry, Freetown, Monrovia,
Lome, Cotonou, Douala, Yaounde, Libreville, Windhoek, Gaborone, Johannesburg, Pretoria, Durban,
Cape Town, Port Elizabeth, Bloemfontein, Antananarivo, Mogadishu, Djibouti, Asmara, Riyadh,
Jeddah, Mecca, Medina, Dubai, Abu Dhabi, Sharjah, Doha, Manama, Kuwait City, Muscat, Sanaa,
Aden, Baghdad, Basra, Mosul, Erbil, Tehran, Mashhad, Isfahan, Shiraz, Tabriz, Damascus, Aleppo,
Beirut, Amman, Jerusalem, Tel Aviv, Haifa, Nicosia, Baku, Tbilisi, Yerevan, Kabul, Kandahar,
Herat, Islamabad, Karachi, Lahore, Peshawar, Quetta, Multan, Faisalabad, Delhi, Mumbai,
Bangalore, Chennai, Kolkata, Hyderabad, Pune, Ahmedabad, Jaipur, Lucknow, Kanpur, Nagpur,
Indore, Bhopal, Patna, Surat, Vadodara, Agra, Varanasi, Amritsar, Chandigarh, Kochi, Goa,
Mysore, Coimbatore, Madurai, Dhaka, Chittagong, Kathmandu, Pokhara, Thimphu, Colombo, Kandy,
Male, Beijing, Shanghai, Guangzhou, Shenzhen, Chengdu, Chongqing, Tianjin, Wuhan, Xian,
Hangzhou, Nanjing, Suzhou, Qingdao, Dalian, Shenyang, Harbin, Kunming, Xiamen, Changsha, Lhasa,
Hong Kong, Macau, Taipei, Kaohsiung, Taichung, Ulaanbaatar, Seoul, Busan, Incheon, Daegu,
Daejeon, Gwangju, Pyongyang, Tokyo, Osaka, Kyoto, Yokohama, Nagoya, Sapporo, Kobe, Fukuoka,
Kawasaki, Hiroshima, Sendai, Nara, Okinawa, Nagasaki, Kanazawa, Bangkok, Chiang Mai, Phuket,
Pattaya, Hanoi, Ho Chi Minh City, Da Nang, Hue, Phnom Penh, Siem Reap, Vientiane, Yangon,
Mandalay, Kuala Lumpur, Penang, Malacca, Singapore, Jakarta, Surabaya, Bandung, Medan, Bali,
Yogyakarta, Manila, Cebu, Davao, Brunei, Sydney, Melbourne, Brisbane, Perth, Adelaide, Canberra,
Hobart, Darwin, Cairns, Gold Coast, Geelong, Auckland, Wellington, Christchurch, Queenstown,
Dunedin, Suva, Apia, Noumea, Port Moresby, Papeete, Nuuk, Tromso, Almaty, Astana, Tashkent,
Samarkand, Bishkek, Dushanbe, Ashgabat
"""

CITIES: Final[tuple[str, ...]] = tuple(
    name.strip() for name in _NAMES.replace("\n", " ").split(",") if name.strip()
)
"""Every real city the dialogues know, in a fixed order."""

HELD_OUT_COUNT: Final = 100
"""How many cities :func:`held_out_cities` keeps out of training."""


def copyable(name: str, encoding: Encoding) -> bool:
    """Whether ``name`` spells in several tokens that differ after a space only in the
    first one's leading space (so the pieces of a name seen elsewhere carry over)."""
    spaced = encoding.encode_ordinary(" " + name)
    bare = encoding.encode_ordinary(name)
    return (
        len(bare) > 1
        and spaced[1:] == bare[1:]
        and len(spaced) == len(bare)
        and encoding.decode([spaced[0]]) == " " + encoding.decode([bare[0]])
    )


@cache
def held_out_cities(encoding: Encoding) -> tuple[str, ...]:
    """The :data:`HELD_OUT_COUNT` cities no training dialogue names: every other
    :func:`copyable` one of :data:`CITIES`, in order."""
    names = [name for name in CITIES if copyable(name, encoding)]
    return tuple(names[1::2][:HELD_OUT_COUNT])


def training_cities(encoding: Encoding) -> tuple[str, ...]:
    """The cities the training dialogues may name: :data:`CITIES` less the held-out ones."""
    held = set(held_out_cities(encoding))
    return tuple(name for name in CITIES if name not in held)
